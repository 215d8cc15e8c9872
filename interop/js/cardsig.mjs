// cardsig.mjs: what signed.mjs and rotation.mjs share to verify a2ad's
// signed agent cards with the official A2A JS SDK's verifier
// (@a2a-js/sdk's verifyAgentCardSignature).
import { verifyAgentCardSignature } from '@a2a-js/sdk';

// The SDK logs each signature that does not verify (a2ad signs each key's
// card twice, once per canonical form: one of the two never verifies with
// the SDK's), so its debug log is silenced.
console.debug = () => {};

export function expect(cond, why) {
  if (!cond) throw new Error(why);
}

// A runner of named checks: check(name, fn) prints "ok <name>" or
// "FAIL <name>: <why>"; failures() counts the failed ones.
export function checks() {
  let failed = 0;
  return {
    async check(name, fn) {
      try {
        await fn();
        console.log(`ok ${name}`);
      } catch (err) {
        failed++;
        console.log(`FAIL ${name}: ${err?.message ?? err}`);
      }
    },
    failures: () => failed,
  };
}

// The JWS protected header of a card signature.
export const headerOf = (sig) => JSON.parse(Buffer.from(sig.protected, 'base64url').toString());

// The SDK's verifier, taking each public key from the JWKS at jku (which
// every signature must name), fetched anew for each signature. Each kid
// asked for is added to log.asked, each one the JWKS lacks to log.missing.
export function jwksVerifier(jku, log = { asked: [], missing: [] }) {
  return verifyAgentCardSignature(async (kid, url) => {
    expect(url === jku, `jku is ${url}, want ${jku}`);
    log.asked.push(kid);
    const res = await fetch(url);
    expect(res.ok, `GET ${url}: HTTP ${res.status}`);
    const jwk = (await res.json()).keys.find((k) => k.kid === kid);
    if (!jwk) log.missing.push(kid);
    expect(jwk, `kid ${kid} is not in the JWKS at ${url}`);
    return jwk;
  });
}
