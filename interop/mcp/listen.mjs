// listen.mjs: subscriptions/listen (revision 2026-07-28) against a running
// a2ad, with the official TypeScript client (@modelcontextprotocol/client
// 2.x, pinned by package-lock.json):
//
//   node listen.mjs <base URL> <catalogue file> <a2ad pid>
//
// The server serves run.sh's demo::sleep catalogue, anonymous. The client
// connects with a listChanged handler for tools (it listens by itself when
// the server offers tools.listChanged); a call's task, ended, is listened
// to as a resource: the acknowledgement honours its URI and the stream ends
// gracefully; a URI of no task is honoured by nothing. Then the script
// adds a tool to the catalogue and reloads a2ad (SIGHUP): the handler must
// see the new list. Prints "ok <check>" or "FAIL <check>: <why>"; exits 1
// on a failure.
import { appendFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [base, catalog, pid] = process.argv.slice(2);
if (!base || !catalog || !pid) {
  console.error('usage: node listen.mjs <base URL> <catalogue file> <a2ad pid>');
  process.exit(2);
}
setTimeout(() => {
  console.error('FAIL listen: timed out after 60 s');
  process.exit(1);
}, 60_000).unref();

function fail(check, why) {
  console.error(`FAIL ${check}: ${why}`);
  process.exit(1);
}

let changed;
const listChanged = new Promise((resolve) => { changed = resolve; });
const client = new Client({ name: 'a2ad-listen-interop', version: '1' }, {
  versionNegotiation: { mode: { pin: '2026-07-28' } },
  listChanged: { tools: { autoRefresh: true, debounceMs: 0, onChanged: (err, items) => changed({ err, items }) } },
});
await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
const caps = client.getServerCapabilities();
if (!caps?.tools?.listChanged || !caps?.resources?.subscribe) {
  fail('capabilities', `want tools.listChanged and resources.subscribe: ${JSON.stringify(caps)}`);
}

const called = await client.callTool({ name: 'demo.sleep', arguments: { seconds: 0 } });
const uri = `a2ad://tasks/${called._meta?.['io.a2ad/task-id']}`;
const own = await client.listen({ resourceSubscriptions: [uri] });
if (JSON.stringify(own.honoredFilter.resourceSubscriptions) !== JSON.stringify([uri])) {
  fail('resource', `honoured ${JSON.stringify(own.honoredFilter)}, want ${uri}`);
}
if ((await own.closed) !== 'graceful') fail('resource', 'the listen of an ended task did not end gracefully');
const none = await client.listen({ resourceSubscriptions: ['a2ad://tasks/no-such-task'] });
if (none.honoredFilter.resourceSubscriptions?.length) fail('resource', `honoured ${JSON.stringify(none.honoredFilter)} for no task`);
await none.close();
console.error('ok resource: an ended task of ours honoured, then a graceful end; no task honoured by nothing');

appendFileSync(catalog, `  - id: demo::echo
    description: Echoes.
    metadata: {"mcp.expose": true}
    builtin: echo
`);
process.kill(Number(pid), 'SIGHUP');
const { err, items } = await listChanged;
if (err || !items?.some((t) => t.name === 'demo.echo')) fail('list_changed', `${err} ${JSON.stringify(items)}`);
console.error('ok list_changed: a reload that added demo.echo reached the listChanged handler with the new list');
await client.close();
process.exit(0);
