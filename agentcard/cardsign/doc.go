// Package cardsign signs agent cards as A2A 1.0 §8.4 says: a JWS (RFC
// 7515) with a detached payload, the RFC 8785 canonical form of the card
// without its signatures member, whose protected header holds alg, kid,
// typ "JOSE" and jku, the URL of the JWKS that publishes the public keys.
//
// Each key signs each card twice, once per canonical form a verifier may
// compute: the served JSON as it is (what a2a-go and any verifier that
// canonicalises the document it fetched compute), and the card as a 1.0
// AgentCard model reads it (what the JS and Python SDKs compute: fields
// outside the 1.0 schema dropped, proto defaults and empty values
// omitted). A verifier accepts the card when one signature verifies over
// its own form, so both kinds of client verify one document.
package cardsign
