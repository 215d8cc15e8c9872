// check.mjs: drives a running a2ad with the official A2A JS SDK client
// (@a2a-js/sdk, pinned by package-lock.json) in one of three modes:
//
//   jsonrpc  the 1.0 client over JSON-RPC (<base>/a2a), the default
//   rest     the 1.0 client over HTTP+JSON (<base>/a2a/rest)
//   v0.3     the SDK's 0.3 compatibility mode (legacyCompat on the card
//            resolver and the JSON-RPC transport factory) over 0.3
//            JSON-RPC (<base>/a2a); it needs an a2ad whose card is the 0.3
//            one (--card-versions 0.3): on a card that also lists 1.0
//            interfaces the SDK picks 1.0 even in that mode
//
// Each mode: card resolution, SendMessage, GetTask, CancelTask, a streaming
// send to completion and a resubscribe (SubscribeToTask); ListTasks in the
// 1.0 modes (0.3 has no tasks/list). Every request after the card must go
// to the mode's endpoint in its wire form (1.0 or 0.3 method names, REST
// paths), so that a client falling back to another binding fails.
//
//   node check.mjs [base URL] [mode]   (or A2AD_URL; default http://127.0.0.1:8080)
//
// Each check prints "ok <name>" or "FAIL <name>: <why>", followed on a FAIL
// by the HTTP exchanges of that check, indented. Exits 1 on any failure or
// when the whole run takes longer than 60 s. Uses the skills of the shipped
// example catalogue: demo::echo and demo::sleep.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { Role, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';

const base = process.argv[2] ?? process.env.A2AD_URL ?? 'http://127.0.0.1:8080';
const MODES = {
  jsonrpc: { title: 'A2A 1.0 JSON-RPC client', binding: 'JSONRPC', version: '1.0', endpoint: `${base}/a2a` },
  rest: { title: 'A2A 1.0 HTTP+JSON client', binding: 'HTTP+JSON', version: '1.0', endpoint: `${base}/a2a/rest` },
  'v0.3': { title: 'A2A 0.3 JSON-RPC client, legacyCompat mode', binding: 'JSONRPC', version: '0.3', endpoint: `${base}/a2a` },
};
const modeName = process.argv[3] ?? 'jsonrpc';
const mode = MODES[modeName];
if (!mode) {
  console.log(`unknown mode ${modeName}: want one of ${Object.keys(MODES).join(', ')}`);
  process.exit(2);
}
const RUN_TIMEOUT_MS = 60_000;
const STREAM_TIMEOUT_MS = 15_000;
const sdk = JSON.parse(readFileSync(new URL('./node_modules/@a2a-js/sdk/package.json', import.meta.url)));

let current = 'start';
let failures = 0;
const runTimer = setTimeout(() => {
  console.log(`FAIL ${current}: the whole run timed out after ${RUN_TIMEOUT_MS / 1000} s`);
  process.exit(1);
}, RUN_TIMEOUT_MS);

// Every HTTP exchange the SDK makes goes through this fetch, so that a FAIL
// can show what the client sent and what the server answered.
let exchanges = [];
async function recordingFetch(url, init = {}) {
  const ex = { line: `${init.method ?? 'GET'} ${url}`, headers: init.headers ?? {}, body: init.body };
  exchanges.push(ex);
  const res = await fetch(url, init);
  ex.status = res.status;
  ex.type = res.headers.get('content-type') ?? '';
  ex.answer = '';
  // Read a copy of the body alongside the SDK (streams too), capped.
  const reader = res.clone().body?.pipeThrough(new TextDecoderStream()).getReader();
  ex.done = (async () => {
    for (let r; reader && !(r = await reader.read()).done; ) if (ex.answer.length < 65536) ex.answer += r.value;
  })().catch(() => {});
  return res;
}

const cut = (s, n = 600) => (s.length > n ? `${s.slice(0, n)}… (${s.length} bytes)` : s);
function describe(err) {
  let s = `${err?.name ?? 'Error'}`;
  if (err?.envelopeCode !== undefined) s += ` (JSON-RPC code ${err.envelopeCode})`;
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
    expectWire(name);
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

// The methods each JSON-RPC version names (0.3: slash-separated, 1.0:
// PascalCase); REST calls go under the mode's endpoint.
const isV03Method = (m) => /^(message|tasks|agent)\//.test(m);
const isV1Method = (m) => /^[A-Z][A-Za-z]+$/.test(m);
// Every A2A request of a check (all but the card's GET) went to the mode's
// endpoint, in its wire form.
function expectWire(name) {
  for (const e of exchanges.filter((x) => !x.line.includes('/.well-known/'))) {
    const [, url] = e.line.split(' ');
    if (mode.binding === 'HTTP+JSON') {
      expect(url.startsWith(`${mode.endpoint}/`), `${name}: ${e.line} is not under ${mode.endpoint}/`);
      continue;
    }
    expect(url === mode.endpoint, `${name}: ${e.line}, want POST ${mode.endpoint}`);
    const method = JSON.parse(String(e.body)).method;
    const ok = mode.version === '0.3' ? isV03Method(method) : isV1Method(method);
    expect(ok, `${name}: JSON-RPC method ${method} is not an A2A ${mode.version} method`);
  }
}
const stateName = (s) => taskStateToJSON(s);
const TERMINAL = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED]);

// A message that names a skill: a data part {"skill": id, "input": {...}}.
const callSkill = (skill, input) => ({
  message: { messageId: randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: 'data', value: { skill, input } } }] },
});
const returnImmediately = (req) => ({ ...req, configuration: { returnImmediately: true } });

function expectTask(res, what) {
  expect(res && !('messageId' in res) && typeof res.id === 'string' && res.id !== '', `${what}: expected a task, got ${JSON.stringify(res)}`);
  return res;
}
function expectState(task, want, what) {
  const got = task.status?.state;
  const ok = Array.isArray(want) ? want.includes(got) : got === want;
  const names = [want].flat().map(stateName).join(' or ');
  expect(ok, `${what}: task ${task.id} is ${stateName(got)}, want ${names}`);
}
function dataParts(artifacts) {
  return (artifacts ?? []).flatMap((a) => a.parts ?? []).filter((p) => p.content?.$case === 'data').map((p) => p.content.value);
}
function expectArtifactData(artifacts, want, what) {
  const got = dataParts(artifacts);
  expect(got.some((d) => isDeepStrictEqual(d, want)), `${what}: no artifact with the data part ${JSON.stringify(want)}; data parts: ${JSON.stringify(got)}`);
}

// Reads a whole stream; the server must close it once the task is terminal.
async function readStream(iterate, what) {
  const signal = AbortSignal.timeout(STREAM_TIMEOUT_MS);
  const events = [];
  try {
    for await (const ev of iterate({ signal })) events.push(ev.payload);
  } catch (err) {
    if (signal.aborted) {
      const seen = events.map((e) => e?.$case).join(', ');
      throw new Error(`${what}: the stream did not end within ${STREAM_TIMEOUT_MS / 1000} s (events so far: ${seen || 'none'})`);
    }
    throw err;
  }
  return events;
}

// Checks a stream's events: first the task, then updates of that task only,
// ending at the terminal state want, with no state change after a terminal one.
function expectTaskStream(events, taskId, want, what) {
  const kinds = events.map((e) => e?.$case ?? 'unknown').join(', ');
  expect(events.length > 0, `${what}: the stream carried no event`);
  expect(events[0].$case === 'task', `${what}: the first event is ${events[0].$case}, want task (events: ${kinds})`);
  const id = taskId ?? events[0].value.id;
  const states = [];
  for (const e of events) {
    expect(['task', 'statusUpdate', 'artifactUpdate'].includes(e?.$case), `${what}: unexpected event ${e?.$case} (events: ${kinds})`);
    const evId = e.$case === 'task' ? e.value.id : e.value.taskId;
    expect(evId === id, `${what}: an event of task ${evId} in the stream of task ${id}`);
    if (e.$case !== 'artifactUpdate') states.push(e.value.status?.state);
  }
  const names = states.map(stateName).join(' → ');
  const firstTerminal = states.findIndex((s) => TERMINAL.has(s));
  expect(firstTerminal >= 0, `${what}: the stream ended without a terminal state (states: ${names})`);
  expect(states.slice(firstTerminal).every((s) => s === states[firstTerminal]), `${what}: the state changed after a terminal one (states: ${names})`);
  expect(states[firstTerminal] === want, `${what}: the stream ended ${stateName(states[firstTerminal])}, want ${stateName(want)} (states: ${names})`);
  return { id, states };
}

console.log(`# @a2a-js/sdk ${sdk.version} (${mode.title}) against ${base}`);
let client, echoTask, cancelTask;
const need = (x, what) => {
  if (!x) throw new Error(`not run: ${what} failed`);
  return x;
};

// The factory of the mode: only the mode's transport, so that the client
// cannot pick another binding.
function factoryOf() {
  const legacyCompat = mode.version === '0.3' ? { enabled: true } : undefined;
  const transport = mode.binding === 'HTTP+JSON'
    ? new RestTransportFactory({ fetchImpl: recordingFetch })
    : new JsonRpcTransportFactory({ fetchImpl: recordingFetch, legacyCompat });
  return new ClientFactory({ transports: [transport], cardResolver: new DefaultAgentCardResolver({ fetchImpl: recordingFetch, legacyCompat }) });
}

await check('card resolution', async () => {
  const c = await factoryOf().createFromUrl(base);
  // Kept even if a check below fails, so that the other checks still show
  // what the server answers to the client the SDK built.
  client = c;
  const card = c.agentCard;
  const ifaces = card.supportedInterfaces ?? [];
  // The SDK's factory picks the mode's binding, preferring protocolVersion
  // "1.0"; its 1.0 transports speak 1.0 even to a "0.3" interface, and in
  // legacyCompat mode it reads a 0.3 card into interfaces of version "0.3"
  // (or "0.3.0"): require one at the mode's endpoint.
  const want = (i) => i.protocolBinding?.toUpperCase() === mode.binding && i.url === mode.endpoint && i.protocolVersion?.startsWith(mode.version);
  expect(
    ifaces.some(want),
    `the card (as the SDK read it) has no supportedInterfaces entry {protocolBinding: "${mode.binding}", protocolVersion: "${mode.version}", url: "${mode.endpoint}"}; it has ${JSON.stringify(ifaces)}`,
  );
  // Without it the SDK silently turns sendMessageStream into a plain send.
  expect(card.capabilities?.streaming === true, `capabilities.streaming is ${card.capabilities?.streaming}, want true`);
  const skills = (card.skills ?? []).map((s) => s.id);
  for (const id of ['demo::echo', 'demo::sleep']) expect(skills.includes(id), `skill ${id} is not on the card (skills: ${skills.join(', ')})`);
  expect(c.protocolVersion === mode.version, `the client chose protocol version ${c.protocolVersion}, want ${mode.version}`);
});

await check('SendMessage', async () => {
  need(client, 'card resolution');
  const input = { message: 'hello from the JS SDK' };
  const task = expectTask(await client.sendMessage(callSkill('demo::echo', input)), 'SendMessage of demo::echo');
  expectState(task, TaskState.TASK_STATE_COMPLETED, 'SendMessage of demo::echo');
  expectArtifactData(task.artifacts, input, 'SendMessage of demo::echo');
  echoTask = task;
});

await check('GetTask', async () => {
  need(echoTask, 'SendMessage');
  const task = expectTask(await client.getTask({ id: echoTask.id }), 'GetTask');
  expect(task.id === echoTask.id && task.contextId === echoTask.contextId, `GetTask(${echoTask.id}) returned task ${task.id} in context ${task.contextId}`);
  expectState(task, TaskState.TASK_STATE_COMPLETED, 'GetTask');
  expectArtifactData(task.artifacts, { message: 'hello from the JS SDK' }, 'GetTask');
});

await check('CancelTask', async () => {
  need(client, 'card resolution');
  const sent = expectTask(await client.sendMessage(returnImmediately(callSkill('demo::sleep', { seconds: 30 }))), 'SendMessage (returnImmediately) of demo::sleep');
  expectState(sent, [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING], 'SendMessage (returnImmediately) of demo::sleep');
  const canceled = expectTask(await client.cancelTask({ id: sent.id }), 'CancelTask');
  expect(canceled.id === sent.id, `CancelTask(${sent.id}) returned task ${canceled.id}`);
  expectState(canceled, TaskState.TASK_STATE_CANCELED, 'CancelTask');
  expectState(await client.getTask({ id: sent.id }), TaskState.TASK_STATE_CANCELED, 'GetTask after CancelTask');
  cancelTask = sent;
});

// 0.3 has no tasks/list: the SDK's 0.3 transport refuses it without a request.
if (mode.version !== '0.3') await check('ListTasks', async () => {
  need(echoTask && cancelTask, 'SendMessage or CancelTask');
  // Newest first, one per page: the canceled task, then the echo task.
  const rawNextPageToken = async () => {
    const last = exchanges.at(-1);
    await last.done;
    const answer = JSON.parse(last.answer);
    return mode.binding === 'JSONRPC' ? answer.result?.nextPageToken : answer.nextPageToken;
  };
  // Page 1 as most callers write it: the SDK sends the missing status as
  // "UNRECOGNIZED", which a2ad reads as no filter; page 2 in full.
  const list = (pageToken) => pageToken === ''
    ? client.listTasks({ pageSize: 1 })
    : client.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 1, pageToken });
  const page1 = await list('');
  const token1 = await rawNextPageToken();
  expect(typeof token1 === 'string' && token1 !== '', `page 1 (pageSize 1): nextPageToken is ${JSON.stringify(token1)}, want a non-empty string`);
  expect(page1.tasks.length === 1 && page1.tasks[0].id === cancelTask.id, `page 1 (pageSize 1): tasks ${JSON.stringify(page1.tasks.map((t) => t.id))}, want [${cancelTask.id}] (the newest)`);
  expectState(page1.tasks[0], TaskState.TASK_STATE_CANCELED, 'ListTasks page 1');
  const page2 = await list(token1);
  const token2 = await rawNextPageToken();
  expect(typeof token2 === 'string', `page 2: nextPageToken is ${JSON.stringify(token2)}, want a string (it is always present, "" on the last page)`);
  expect(page2.tasks.length === 1 && page2.tasks[0].id === echoTask.id, `page 2: tasks ${JSON.stringify(page2.tasks.map((t) => t.id))}, want [${echoTask.id}]`);
  expectState(page2.tasks[0], TaskState.TASK_STATE_COMPLETED, 'ListTasks page 2');
});

await check('SendStreamingMessage', async () => {
  need(client, 'card resolution');
  const events = await readStream((opts) => client.sendMessageStream(callSkill('demo::sleep', { seconds: 1 }), opts), 'SendStreamingMessage');
  const { states } = expectTaskStream(events, undefined, TaskState.TASK_STATE_COMPLETED, 'SendStreamingMessage');
  expect(events.some((e) => e.$case === 'statusUpdate'), `SendStreamingMessage: no statusUpdate event (states: ${states.map(stateName).join(' → ')})`);
  const artifacts = events.flatMap((e) => (e.$case === 'artifactUpdate' ? [e.value.artifact] : e.$case === 'task' ? e.value.artifacts : []));
  expectArtifactData(artifacts, { slept: 1 }, 'SendStreamingMessage');
});

await check('SubscribeToTask', async () => {
  need(client, 'card resolution');
  const sent = expectTask(await client.sendMessage(returnImmediately(callSkill('demo::sleep', { seconds: 2 }))), 'SendMessage (returnImmediately) of demo::sleep');
  const events = await readStream((opts) => client.resubscribeTask({ id: sent.id }, opts), 'SubscribeToTask');
  expectTaskStream(events, sent.id, TaskState.TASK_STATE_COMPLETED, 'SubscribeToTask');
  expect(!TERMINAL.has(events[0].value.status?.state), `SubscribeToTask: the first event's task is already ${stateName(events[0].value.status?.state)}; want it still running`);
});

clearTimeout(runTimer);
console.log(failures ? `# ${failures} check(s) failed` : '# all checks passed');
process.exit(failures ? 1 : 0);
