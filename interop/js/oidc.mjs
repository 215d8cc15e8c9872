// oidc.mjs: the JS SDK's default card resolver and client against a keyed
// a2ad with an OpenID Connect issuer too (no anonymous callers): a real
// issuer in this process (discovery and a JWKS of an ES256 key), the
// a2ad binary started on random loopback ports. The card resolves, every
// security scheme is read (bearer, apiKey, oidc), and client.getAgentCard()
// with the issuer's token gets the caller's extended card.
//
//   node oidc.mjs A2AD_BINARY CATALOG KEYS_FILE STORE
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { generateKeyPairSync, sign } from 'node:crypto';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

const [bin, catalog, keys, store] = process.argv.slice(2);
if (!store) {
  console.log('usage: node oidc.mjs A2AD_BINARY CATALOG KEYS_FILE STORE');
  process.exit(2);
}
const audience = 'a2ad-js-oidc';
const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' };
let issuer;
const idp = createServer((req, res) => {
  const doc = req.url === '/.well-known/openid-configuration'
    ? { issuer, jwks_uri: `${issuer}/jwks`, id_token_signing_alg_values_supported: ['ES256'] }
    : req.url === '/jwks' ? { keys: [jwk] } : null;
  res.writeHead(doc ? 200 : 404, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(doc ?? {}));
});
await new Promise((ok) => idp.listen(0, '127.0.0.1', ok));
issuer = `http://127.0.0.1:${idp.address().port}`;

const b64 = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const now = Math.floor(Date.now() / 1000);
const head = b64({ alg: 'ES256', kid: 'k1', typ: 'JWT' });
const claims = b64({ iss: issuer, aud: audience, sub: 'globex', a2a_tiers: ['partner'], iat: now, exp: now + 600 });
const sig = sign('sha256', Buffer.from(`${head}.${claims}`), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
const token = `${head}.${claims}.${sig}`;

const a2ad = spawn(bin, ['serve', '--catalog', catalog, '--store', store, '--keys', keys, '--listen', '127.0.0.1:0',
  '--admin-listen', '127.0.0.1:0', '--oidc-issuer', issuer, '--oidc-audience', audience, '--expose-all'], { stdio: ['ignore', 'ignore', 'pipe'] });
let log = '';
const base = await new Promise((ok, fail) => {
  const timer = setTimeout(() => fail(new Error(`a2ad did not start:\n${log}`)), 20_000);
  a2ad.stderr.on('data', (d) => {
    log += d;
    const m = /"base_url":"([^"]+)"[^\n]*"message":"a2ad serving"/.exec(log);
    if (m) {
      clearTimeout(timer);
      ok(m[1]);
    }
  });
  a2ad.on('exit', (code) => fail(new Error(`a2ad exited ${code}:\n${log}`)));
}).catch((err) => {
  console.log(`FAIL server: ${err.message}`);
  idp.close();
  process.exit(1);
});

console.log(`# @a2a-js/sdk default resolver against a keyed a2ad with OIDC at ${base}`);
let failures = 0;
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (err) {
    failures++;
    console.log(`FAIL ${name}: ${err?.message ?? err}`);
  }
}
function expect(cond, why) {
  if (!cond) throw new Error(why);
}

await check('card resolution (DefaultAgentCardResolver)', async () => {
  const card = await new DefaultAgentCardResolver().resolve(base);
  const schemes = Object.keys(card.securitySchemes ?? {}).sort();
  expect(schemes.join() === 'apiKey,bearer,oidc', `securitySchemes ${schemes}`);
  const oidc = card.securitySchemes.oidc.scheme;
  expect(oidc?.$case === 'openIdConnectSecurityScheme' && oidc.value.openIdConnectUrl === `${issuer}/.well-known/openid-configuration`,
    `the oidc scheme reads as ${JSON.stringify(oidc)}`);
  expect(card.capabilities?.extendedAgentCard === true, 'the card announces no extended card');
});

await check('client.getAgentCard with a token', async () => {
  const bearer = (url, init = {}) => fetch(url, { ...init, headers: { ...(init.headers ?? {}), Authorization: `Bearer ${token}` } });
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: bearer })], cardResolver: new DefaultAgentCardResolver() });
  const client = await factory.createFromUrl(base);
  const card = await client.getAgentCard();
  const skills = (card.skills ?? []).map((s) => s.id);
  expect(skills.includes('demo::echo'), `the extended card lists ${skills}`);
});

if (failures) console.log(`# a2ad log:\n${log}`);
a2ad.kill();
idp.close();
console.log(failures ? `# ${failures} check(s) failed` : '# all checks passed');
process.exit(failures ? 1 : 0);
