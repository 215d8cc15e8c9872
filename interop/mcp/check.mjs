// check.mjs: drives a running a2ad with the official MCP TypeScript SDK
// client (@modelcontextprotocol/sdk's Client over StreamableHTTPClientTransport,
// pinned by package-lock.json):
//
//   node check.mjs <base URL> <partner key> <internal key> <conformance base URL> <sleep base URL>
//
// The first server serves the shipped example catalogue with a keys file of
// two callers, one of tier partner (who sees demo.echo and text.wordcount)
// and one of tier internal (who sees no tool); the second, anonymous, serves
// examples/conformance/mcp.yaml, whose test_tool_with_progress reports three
// progress notes (the example catalogue has no tool that reports progress);
// the third, anonymous, serves run.sh's one-function catalogue of demo::sleep
// as an MCP tool (the example catalogue's is not one), for the cancel.
// Checks: each caller's tools/list; a call with structured output; progress;
// a resend with the same idempotency key; a task read as a resource by its
// owner and by the other caller; a hidden tool answered as an unknown one;
// a call the client aborts (notifications/cancelled) ending its task canceled.
//
// Each check prints "ok <name>" or "FAIL <name>: <why>", followed on a FAIL
// by the HTTP exchanges of that check, indented. Exits 1 on any failure or
// when the whole run takes longer than 60 s.
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [base, partnerKey, internalKey, confBase, sleepBase] = process.argv.slice(2);
if (!base || !partnerKey || !internalKey || !confBase || !sleepBase) {
  console.log('usage: node check.mjs <base URL> <partner key> <internal key> <conformance base URL> <sleep base URL>');
  process.exit(2);
}
const RUN_TIMEOUT_MS = 60_000;
const sdk = JSON.parse(readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url)));
const TASK_ID = 'io.a2ad/task-id';
const IDEMPOTENCY_KEY = 'io.a2ad/idempotency-key';

let current = 'start';
let failures = 0;
const runTimer = setTimeout(() => {
  console.log(`FAIL ${current}: the whole run timed out after ${RUN_TIMEOUT_MS / 1000} s`);
  process.exit(1);
}, RUN_TIMEOUT_MS);

// Every HTTP exchange the SDK makes goes through this fetch, so that a FAIL
// can show what the client sent and what the server answered (keys masked).
let exchanges = [];
async function recordingFetch(url, init = {}) {
  const headers = Object.fromEntries(new Headers(init.headers ?? {}).entries());
  if (headers.authorization) headers.authorization = 'Bearer (masked)';
  const ex = { line: `${init.method ?? 'GET'} ${url}`, headers, body: init.body };
  exchanges.push(ex);
  const res = await fetch(url, init);
  ex.status = res.status;
  ex.type = res.headers.get('content-type') ?? '';
  ex.answer = '';
  const reader = res.clone().body?.pipeThrough(new TextDecoderStream()).getReader();
  ex.done = (async () => {
    for (let r; reader && !(r = await reader.read()).done; ) if (ex.answer.length < 65536) ex.answer += r.value;
  })().catch(() => {});
  return res;
}

const cut = (s, n = 600) => (s.length > n ? `${s.slice(0, n)}… (${s.length} bytes)` : s);
function describe(err) {
  let s = `${err?.name ?? 'Error'}`;
  if (err?.code !== undefined) s += ` (code ${err.code})`;
  s += `: ${err?.message ?? err}`;
  if (err?.data !== undefined) s += ` data=${JSON.stringify(err.data)}`;
  if (err?.cause) s += ` [cause: ${describe(err.cause)}]`;
  return s.replace(/\s+/g, ' ');
}

async function check(name, fn) {
  current = name;
  exchanges = [];
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (err) {
    failures++;
    console.log(`FAIL ${name}: ${describe(err)}`);
    await Promise.race([Promise.all(exchanges.map((e) => e.done)), new Promise((r) => setTimeout(r, 200))]);
    for (const e of exchanges) {
      const h = Object.entries(e.headers).map(([k, v]) => `${k}: ${v}`).join(', ');
      console.log(`    sent:     ${e.line} [${h}]${e.body ? ` ${cut(String(e.body))}` : ''}`);
      console.log(e.status === undefined ? '    answered: (no answer)' : `    answered: ${e.status} ${e.type} ${cut(e.answer).replace(/\n/g, '\\n')}`);
    }
  }
}

function expect(cond, why) {
  if (!cond) throw new Error(why);
}
const need = (x, what) => {
  if (!x) throw new Error(`not run: ${what} failed`);
  return x;
};

// connect opens a client of url's MCP endpoint, with key as its bearer token
// (none: the anonymous caller).
async function connect(url, key) {
  const requestInit = key ? { headers: { Authorization: `Bearer ${key}` } } : undefined;
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit, fetch: recordingFetch });
  const client = new Client({ name: 'a2ad-interop', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

// rpcError runs fn, which must fail with a JSON-RPC error, and returns that error.
async function rpcError(fn, what) {
  try {
    const res = await fn();
    throw new Error(`${what}: expected a JSON-RPC error, got the result ${JSON.stringify(res)}`);
  } catch (err) {
    if (err?.name !== 'McpError') throw err;
    return err;
  }
}

function taskIdOf(res, what) {
  const id = res?._meta?.[TASK_ID];
  expect(typeof id === 'string' && id !== '', `${what}: no _meta["${TASK_ID}"] in ${JSON.stringify(res)}`);
  return id;
}

console.log(`# @modelcontextprotocol/sdk ${sdk.version} (Client, Streamable HTTP) against ${base}/mcp and ${confBase}/mcp`);
let partner, internal, wordcountTask;

await check('connect: the partner and the internal caller initialize', async () => {
  partner = await connect(base, partnerKey);
  internal = await connect(base, internalKey);
  const info = partner.getServerVersion();
  expect(info?.name === 'a2ad', `serverInfo.name is ${JSON.stringify(info?.name)}, want "a2ad"`);
  expect(partner.getServerCapabilities()?.tools, `the server declares no tools capability: ${JSON.stringify(partner.getServerCapabilities())}`);
});

await check('tools/list: each tier sees exactly its tools', async () => {
  const p = await need(partner, 'connect').listTools();
  const names = p.tools.map((t) => t.name).sort();
  const want = ['demo.echo', 'text.wordcount'];
  expect(isDeepStrictEqual(names, want), `partner sees ${JSON.stringify(names)}, want ${JSON.stringify(want)}`);
  const wc = p.tools.find((t) => t.name === 'text.wordcount');
  expect(wc.outputSchema?.type === 'object', `text.wordcount has no object outputSchema: ${JSON.stringify(wc)}`);
  expect(wc.annotations?.readOnlyHint === true, `text.wordcount's readOnlyHint is ${wc.annotations?.readOnlyHint}, want true`);
  const i = await need(internal, 'connect').listTools();
  expect(isDeepStrictEqual(i.tools, []), `internal sees ${JSON.stringify(i.tools.map((t) => t.name))}, want none`);
  expect(i.nextCursor === undefined, `internal's empty list has a nextCursor ${JSON.stringify(i.nextCursor)}`);
});

await check('tools/call: text.wordcount answers structured output and names its task', async () => {
  const res = await need(partner, 'connect').callTool({ name: 'text.wordcount', arguments: { text: 'the quick brown fox' } });
  expect(!res.isError, `isError: ${JSON.stringify(res)}`);
  const want = { words: 4, characters: 19 };
  expect(isDeepStrictEqual(res.structuredContent, want), `structuredContent is ${JSON.stringify(res.structuredContent)}, want ${JSON.stringify(want)}`);
  const text = res.content?.find((c) => c.type === 'text')?.text;
  expect(text !== undefined && isDeepStrictEqual(JSON.parse(text), want), `the text content is ${JSON.stringify(text)}, want the same object as JSON`);
  wordcountTask = taskIdOf(res, 'the result');
  expect(res._meta['io.a2ad/task-state'] === 'completed', `_meta["io.a2ad/task-state"] is ${JSON.stringify(res._meta['io.a2ad/task-state'])}, want "completed"`);
});

await check('progress: test_tool_with_progress reports three notifications in order', async () => {
  const anon = await connect(confBase);
  try {
    const heard = [];
    const res = await anon.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
      onprogress: (p) => heard.push(p),
    });
    expect(!res.isError, `isError: ${JSON.stringify(res)}`);
    const text = res.content?.[0]?.text;
    expect(text === 'Tool with progress executed successfully', `the result's text is ${JSON.stringify(text)}`);
    const got = heard.map((p) => ({ progress: p.progress, message: p.message }));
    const want = [
      { progress: 1, message: '0 of 100' },
      { progress: 2, message: '50 of 100' },
      { progress: 3, message: '100 of 100' },
    ];
    expect(isDeepStrictEqual(got, want), `heard ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  } finally {
    await anon.close();
  }
});

await check('idempotency: a resend with the same key answers the same task; no key, a new one', async () => {
  const c = need(partner, 'connect');
  const key = `interop-${process.pid}-${Date.now()}`;
  const call = (meta) => c.callTool({ name: 'demo.echo', arguments: { text: 'hello' }, ...(meta ? { _meta: meta } : {}) });
  const first = taskIdOf(await call({ [IDEMPOTENCY_KEY]: key }), 'the first keyed call');
  const again = taskIdOf(await call({ [IDEMPOTENCY_KEY]: key }), 'the resend');
  expect(again === first, `the resend with the same key answered task ${again}, want ${first}`);
  const bare1 = taskIdOf(await call(), 'the first call without a key');
  const bare2 = taskIdOf(await call(), 'the second call without a key');
  const ids = new Set([first, bare1, bare2]);
  expect(ids.size === 3, `calls without a key answered tasks ${bare1} and ${bare2} (the keyed one ${first}), want three different tasks`);
});

await check('resources/read: the owner reads its task; the other caller gets "not found"', async () => {
  const id = need(wordcountTask, 'tools/call');
  const uri = `a2ad://tasks/${id}`;
  const res = await need(partner, 'connect').readResource({ uri });
  expect(res.contents?.length === 1, `${res.contents?.length} contents, want 1`);
  const [c] = res.contents;
  expect(c.uri === uri && c.mimeType === 'application/json', `contents[0] is ${c.uri} ${c.mimeType}, want ${uri} application/json`);
  const task = JSON.parse(c.text);
  expect(task.id === id, `the task read is ${task.id}, want ${id}`);
  expect(task.status?.state === 'TASK_STATE_COMPLETED', `the task's state is ${task.status?.state}, want TASK_STATE_COMPLETED`);
  const other = await rpcError(() => need(internal, 'connect').readResource({ uri }), "the other caller's read");
  const none = await rpcError(() => partner.readResource({ uri: 'a2ad://tasks/no-such-task' }), 'the read of no task');
  expect(other.code === -32602 && other.message === 'MCP error -32602: Resource not found', `the other caller got ${describe(other)}, want -32602 Resource not found`);
  expect(isDeepStrictEqual(other.data, { uri }), `the other caller's error data is ${JSON.stringify(other.data)}, want ${JSON.stringify({ uri })}`);
  expect(none.code === other.code && none.message === other.message, `another caller's task got ${describe(other)}, no task ${describe(none)}: want the same`);
});

await check('unknown tool: a hidden tool and one that does not exist get the same error', async () => {
  const c = need(internal, 'connect');
  const hidden = await rpcError(() => c.callTool({ name: 'text.wordcount', arguments: { text: 'a b' } }), 'the hidden tool');
  const unknown = await rpcError(() => c.callTool({ name: 'no.such', arguments: {} }), 'the unknown tool');
  expect(hidden.code === -32602 && hidden.message === 'MCP error -32602: Unknown tool "text.wordcount"', `the hidden tool got ${describe(hidden)}, want -32602 Unknown tool "text.wordcount"`);
  const unname = (e, name) => ({ code: e.code, message: e.message.replace(JSON.stringify(name), '"NAME"'), data: e.data });
  expect(isDeepStrictEqual(unname(hidden, 'text.wordcount'), unname(unknown, 'no.such')), `hidden: ${describe(hidden)}; unknown: ${describe(unknown)}: want the same but for the name`);
});

await check('cancel: an aborted call sends notifications/cancelled and its task ends canceled', async () => {
  const anon = await connect(sleepBase);
  try {
    const signal = AbortSignal.timeout(700);
    try {
      const res = await anon.callTool({ name: 'demo.sleep', arguments: { seconds: 30 } }, undefined, { signal });
      throw new Error(`a 30 s sleep answered within 700 ms: ${JSON.stringify(res)}`);
    } catch (err) {
      if (!signal.aborted) throw err;
    }
    // The caller's one task, read until canceled (the cancel is a notification: no answer says when it is done).
    let state;
    for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
      const list = await anon.listResources();
      expect(list.resources.length === 1, `the caller has ${list.resources.length} task resources, want 1`);
      const read = await anon.readResource({ uri: list.resources[0].uri });
      state = JSON.parse(read.contents[0].text).status?.state;
      if (state === 'TASK_STATE_CANCELED') return;
    }
    throw new Error(`the task of the aborted call is ${state} after 10 s, want TASK_STATE_CANCELED`);
  } finally {
    await anon.close();
  }
});

await partner?.close();
await internal?.close();
clearTimeout(runTimer);
console.log(failures ? `# ${failures} check(s) failed` : '# all checks passed');
process.exit(failures ? 1 : 0);
