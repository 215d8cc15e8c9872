// Package jcs writes the JSON Canonicalization Scheme of RFC 8785: object
// members sorted by the UTF-16 code units of their names, no insignificant
// white space, strings escaped as ECMAScript's JSON.stringify does, and
// numbers as IEEE 754 doubles in ECMAScript's Number-to-String form.
//
// A signature over a JSON document (an agent card's JWS, say) covers these
// bytes, so that a verifier that parsed and re-serialised the document
// computes the same ones.
package jcs
