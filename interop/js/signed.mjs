// signed.mjs: verifies a2ad's signed agent cards with the official A2A JS
// SDK's verifier (@a2a-js/sdk's verifyAgentCardSignature, pinned by
// package-lock.json), against an a2ad started with --card-signing-key and
// --keys (run.sh starts one):
//
//   node signed.mjs BASE_URL API_KEY KID...
//
// The SDK's card resolver reads the public card; the extended card comes
// from GetExtendedAgentCard (JSON-RPC 1.0) with API_KEY. Each card must
// verify with the SDK's verifier taking the public key from the JWKS its
// signatures' jku names, with each KID's signatures alone (so every key
// signs, in the form the SDK computes), and must stop verifying once a
// skill's name is changed. Prints "ok <name>" or "FAIL <name>: <why>";
// exits 1 on any failure.
import { readFileSync } from 'node:fs';
import { canonicalizeAgentCard } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { checks, expect, headerOf, jwksVerifier } from './cardsig.mjs';

const [base, apiKey, ...kids] = process.argv.slice(2);
if (!base || !apiKey || kids.length === 0) {
  console.log('usage: node signed.mjs BASE_URL API_KEY KID...');
  process.exit(2);
}
const sdk = JSON.parse(readFileSync(new URL('./node_modules/@a2a-js/sdk/package.json', import.meta.url)));
const jku = `${base}/.well-known/a2ad-card-keys.json`;
console.log(`# @a2a-js/sdk ${sdk.version} verifyAgentCardSignature against ${base} (kids ${kids.join(', ')})`);
const { check, failures } = checks();
const log = { asked: [], missing: [] };
const verifier = jwksVerifier(jku, log);

async function expectVerifies(card, what) {
  expect((card.signatures ?? []).length === 2 * kids.length, `${what}: ${card.signatures?.length ?? 0} signatures, want 2 per key (${2 * kids.length})`);
  for (const kid of kids) {
    const own = card.signatures.filter((s) => headerOf(s).kid === kid);
    expect(own.length === 2, `${what}: kid ${kid} has ${own.length} signatures, want 2`);
    for (const s of own) {
      const h = headerOf(s);
      expect(h.typ === 'JOSE' && h.alg && h.jku === jku, `${what}: protected header ${JSON.stringify(h)}, want alg, kid, typ JOSE, jku ${jku}`);
    }
    await verifier({ ...card, signatures: own }).catch((err) => {
      throw new Error(`${what}: the signatures of kid ${kid} do not verify (${err.message}); the SDK's canonical form: ${canonicalizeAgentCard(card).slice(0, 400)}…`);
    });
  }
  const tampered = structuredClone(card);
  tampered.skills[0].name += ' (changed)';
  let verified = true;
  await verifier(tampered).catch(() => (verified = false));
  expect(!verified, `${what}: a card whose skill ${tampered.skills[0].id} was renamed still verifies`);
}

await check('public card (DefaultAgentCardResolver)', async () => {
  const card = await new DefaultAgentCardResolver().resolve(base);
  expect((card.skills ?? []).length > 0, 'the public card lists no skill');
  await expectVerifies(card, 'public card');
  expect(kids.every((k) => log.asked.includes(k)), `the verifier asked for kids ${log.asked}, want each of ${kids}`);
});

// The extended card as the SDK's client gets it (client.getAgentCard with
// a key: GetExtendedAgentCard, read into its model).
await check('extended card (client.getAgentCard with a key, GetExtendedAgentCard 1.0)', async () => {
  const keyed = (url, init = {}) => fetch(url, { ...init, headers: { ...(init.headers ?? {}), Authorization: `Bearer ${apiKey}` } });
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: keyed })],
    cardResolver: new DefaultAgentCardResolver(),
  });
  const client = await factory.createFromUrl(base);
  const card = await client.getAgentCard();
  expect(card.skills.some((s) => s.id === 'demo::sleep'), `the extended card lists ${card.skills.map((s) => s.id)}`);
  await expectVerifies(card, 'extended card');
});

// Without a key, client.getAgentCard() (which calls GetExtendedAgentCard,
// the card announcing one) gets the public card: this server lets
// anonymous callers in.
await check('public card (client.getAgentCard without a key)', async () => {
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory()], cardResolver: new DefaultAgentCardResolver() });
  const client = await factory.createFromUrl(base);
  const card = await client.getAgentCard();
  expect((card.skills ?? []).length > 0, 'the public card lists no skill');
  await expectVerifies(card, 'public card from getAgentCard');
});

console.log(failures() ? `# ${failures()} check(s) failed` : '# all checks passed');
process.exit(failures() ? 1 : 0);
