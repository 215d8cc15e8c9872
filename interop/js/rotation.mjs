// rotation.mjs: a card signing key rotation checked with the official A2A
// JS SDK's verifier (@a2a-js/sdk's verifyAgentCardSignature), against the
// real a2ad binary, started here on random loopback ports with an API key
// and two key files: card.pem, the one rotated, and steady.pem (RS256),
// which signs throughout. a2ad refuses one key in two files, so a rotation
// that ends with the new key alone rewrites a file, as an operator would;
// the steps are those of cmd/a2ad's TestSignedCardRotation:
//
//   1. card.pem holds the old key (ES256): the cards verify with the old
//      and the steady key, each alone;
//   2. card.pem holds the old and the new key (EdDSA), `a2ad reload`: the
//      JWKS lists the three keys, the cards verify with each alone;
//   3. card.pem holds the new key alone, `a2ad reload`: the JWKS lists the
//      new and the steady key only, the cards verify with each alone and
//      carry no signature of the old kid (none of the old key's earlier
//      signatures either), and the card of step 2 no longer verifies by its
//      old key's signatures (the JWKS lacks its kid) but still does by the
//      new key's (a client's cached card outlives the rotation).
//
// The cards: the public one as the SDK's DefaultAgentCardResolver reads it,
// the extended one from client.getAgentCard() with the API key (JSON-RPC
// 1.0 GetExtendedAgentCard). The kids are the keys' RFC 7638 thumbprints,
// computed here.
//
//   node rotation.mjs A2AD_BINARY CATALOG DIR
//
// Prints "ok <name>" or "FAIL <name>: <why>"; exits 1 on any failure.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { checks, expect, headerOf, jwksVerifier } from './cardsig.mjs';

const [bin, catalog, dir] = process.argv.slice(2);
if (!dir) {
  console.log('usage: node rotation.mjs A2AD_BINARY CATALOG DIR');
  process.exit(2);
}

// A key: its PKCS#8 PEM and its kid, the RFC 7638 thumbprint (the
// required members, sorted, hashed with SHA-256) a2ad names it by.
function newKey(type, opts) {
  const { privateKey } = generateKeyPairSync(type, opts);
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  const members = { EC: ['crv', 'kty', 'x', 'y'], OKP: ['crv', 'kty', 'x'], RSA: ['e', 'kty', 'n'] }[jwk.kty];
  const canonical = JSON.stringify(Object.fromEntries(members.map((m) => [m, jwk[m]])));
  return { pem: privateKey.export({ type: 'pkcs8', format: 'pem' }), kid: createHash('sha256').update(canonical).digest('base64url') };
}
const oldKey = newKey('ec', { namedCurve: 'P-256' });
const newK = newKey('ed25519');
const steady = newKey('rsa', { modulusLength: 2048 });
const cardPem = join(dir, 'card.pem');
const steadyPem = join(dir, 'steady.pem');
const keysFile = join(dir, 'keys.yaml');
writeFileSync(cardPem, oldKey.pem);
writeFileSync(steadyPem, steady.pem);
const created = spawnSync(bin, ['keys', 'create', '--keys', keysFile, '--id', 'rotation', '--tier', 'partner'], { encoding: 'utf8' });
const apiKey = created.stdout.trim().split('\n').at(-1);
if (created.status !== 0 || !apiKey) {
  console.log(`FAIL server: a2ad keys create exited ${created.status}: ${created.stderr}`);
  process.exit(1);
}

const a2ad = spawn(bin, ['serve', '--catalog', catalog, '--store', join(dir, 'rotation.db'), '--keys', keysFile,
  '--listen', '127.0.0.1:0', '--admin-listen', '127.0.0.1:0', '--card-signing-key', cardPem, '--card-signing-key', steadyPem],
{ stdio: ['ignore', 'ignore', 'pipe'] });
process.on('exit', () => a2ad.kill());
let log = '';
const { base, admin } = await new Promise((ok, fail) => {
  const timer = setTimeout(() => fail(new Error(`a2ad did not start:\n${log}`)), 20_000);
  a2ad.stderr.on('data', (d) => {
    log += d;
    const m = /"admin_listen":"([^"]+)"[^\n]*"base_url":"([^"]+)"[^\n]*"message":"a2ad serving"/.exec(log);
    if (m) {
      clearTimeout(timer);
      ok({ admin: `http://${m[1]}`, base: m[2] });
    }
  });
  a2ad.on('exit', (code) => fail(new Error(`a2ad exited ${code}:\n${log}`)));
}).catch((err) => {
  console.log(`FAIL server: ${err.message}`);
  process.exit(1);
});

const jku = `${base}/.well-known/a2ad-card-keys.json`;
console.log(`# @a2a-js/sdk verifyAgentCardSignature through a key rotation at ${base} (old ${oldKey.kid}, new ${newK.kid}, steady ${steady.kid})`);
const { check, failures } = checks();

async function cards() {
  const keyed = (url, init = {}) => fetch(url, { ...init, headers: { ...(init.headers ?? {}), Authorization: `Bearer ${apiKey}` } });
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: keyed })], cardResolver: new DefaultAgentCardResolver() });
  const client = await factory.createFromUrl(base);
  const extended = await client.getAgentCard();
  expect(extended.skills.some((s) => s.id === 'demo::sleep'), `the extended card lists ${extended.skills.map((s) => s.id)}`);
  return { public: client.agentCard, extended };
}
async function jwksKids() {
  const res = await fetch(jku);
  expect(res.ok, `GET ${jku}: HTTP ${res.status}`);
  return (await res.json()).keys.map((k) => k.kid);
}
const sameSet = (a, b) => a.length === b.length && a.every((x) => b.includes(x));

// Each of kids signs each card twice (once per canonical form), no other
// kid signs, and each kid's signatures verify alone.
async function expectSignedBy(got, kids) {
  for (const [which, card] of Object.entries(got)) {
    const signers = (card.signatures ?? []).map((s) => headerOf(s).kid);
    expect(signers.length === 2 * kids.length && kids.every((k) => signers.filter((s) => s === k).length === 2),
      `the ${which} card is signed by kids ${signers}, want each of ${kids} twice`);
    for (const kid of kids) {
      const own = card.signatures.filter((s) => headerOf(s).kid === kid);
      await jwksVerifier(jku)({ ...card, signatures: own }).catch((err) => {
        throw new Error(`the ${which} card: the signatures of kid ${kid} do not verify (${err.message})`);
      });
    }
  }
}

// reload rewrites card.pem with pems and runs `a2ad reload`, which answers
// once the keys are in force.
function reload(...pems) {
  writeFileSync(cardPem, pems.join(''));
  const r = spawnSync(bin, ['reload', '--server', admin], { encoding: 'utf8' });
  expect(r.status === 0, `a2ad reload exited ${r.status}: ${r.stdout}${r.stderr}`);
}

let overlap;
await check('1. old and steady key: the cards verify with each', async () => {
  const kids = await jwksKids();
  expect(sameSet(kids, [oldKey.kid, steady.kid]), `the JWKS lists ${kids}, want the old and the steady key`);
  await expectSignedBy(await cards(), [oldKey.kid, steady.kid]);
});

await check('2. old, new and steady key after a reload: the cards verify with each', async () => {
  reload(oldKey.pem, newK.pem);
  const kids = await jwksKids();
  expect(sameSet(kids, [oldKey.kid, newK.kid, steady.kid]), `the JWKS lists ${kids}, want the old, the new and the steady key`);
  overlap = await cards();
  await expectSignedBy(overlap, [oldKey.kid, newK.kid, steady.kid]);
});

await check('3. new and steady key after a reload: the old key is gone', async () => {
  expect(overlap, 'not run: step 2 failed');
  reload(newK.pem);
  const kids = await jwksKids();
  expect(sameSet(kids, [newK.kid, steady.kid]), `the JWKS lists ${kids}, want the new and the steady key only`);
  const now = await cards();
  await expectSignedBy(now, [newK.kid, steady.kid]);
  const oldSigs = new Set(Object.values(overlap).flatMap((c) => c.signatures.filter((s) => headerOf(s).kid === oldKey.kid).map((s) => s.signature)));
  for (const [which, card] of Object.entries(now)) {
    expect(!card.signatures.some((s) => oldSigs.has(s.signature)), `the ${which} card still carries a signature made by the old key`);
  }
});

await check('3. the card of step 2: its old key signatures no longer verify, its new key ones do', async () => {
  expect(overlap, 'not run: step 2 failed');
  for (const [which, card] of Object.entries(overlap)) {
    const log = { asked: [], missing: [] };
    let verified = true;
    await jwksVerifier(jku, log)({ ...card, signatures: card.signatures.filter((s) => headerOf(s).kid === oldKey.kid) }).catch(() => (verified = false));
    expect(!verified, `the ${which} card of step 2 still verifies by the old key's signatures`);
    expect(log.missing.includes(oldKey.kid), `the ${which} card of step 2 failed for another reason than the old kid missing from the JWKS (asked ${log.asked}, missing ${log.missing})`);
    await jwksVerifier(jku)({ ...card, signatures: card.signatures.filter((s) => headerOf(s).kid === newK.kid) }).catch((err) => {
      throw new Error(`the ${which} card of step 2 no longer verifies by the new key's signatures (${err.message})`);
    });
  }
});

if (failures()) console.log(`# a2ad log:\n${log}`);
console.log(failures() ? `# ${failures()} check(s) failed` : '# all checks passed');
process.exit(failures() ? 1 : 0);
