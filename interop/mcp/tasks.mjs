// tasks.mjs: MCP's tasks extension (io.modelcontextprotocol/tasks) against a
// running a2ad, with the extension's official TypeScript client
// (@modelcontextprotocol/ext-tasks over @modelcontextprotocol/client 2.x,
// pinned by package-lock.json), on revision 2026-07-28:
//
//   node tasks.mjs call <base URL>              prints a task reference
//   node tasks.mjs resume <base URL> <reference>
//
// The server serves run.sh's catalogue whose demo::sleep is a retry-safe MCP
// tool, with a short --mcp-task-after. "call" calls demo.sleep for 3 s: the
// call must become a task handle; the execution hands its reference off
// (printed on stdout) without waiting. run.sh then SIGKILLs a2ad and starts it
// again on the same store; "resume" resumes the task from the reference,
// settles it and checks its result, then calls demo.sleep for 30 s and
// cancels the handle (tasks/cancel): the outcome is cancelled; then calls
// demo.ask, whose handle waits in input_required: the client's input
// handler answers the elicitation (tasks/update) and the call completes;
// last, a plain client that declares elicitation (no extension) calls
// demo.ask: the question comes as an input_required result (multi
// round-trip requests), its elicitation handler answers, and the client's
// own retry gets the result.
//
// The client needs a host-owned raw dispatch for the extension's requests
// on 2026-07-28 (its SDK adapter's codecs refuse them): it POSTs each one to
// <base URL>/mcp with the routing headers the extension asks for. Prints
// "ok <check>" or "FAIL <check>: <why>"; exits 1 on a failure.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';

const [mode, base, reference] = process.argv.slice(2);
if (!['call', 'resume'].includes(mode) || !base || (mode === 'resume' && !reference)) {
  console.error('usage: node tasks.mjs call <base URL> | node tasks.mjs resume <base URL> <reference>');
  process.exit(2);
}
const REVISION = '2026-07-28';
const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const clientInfo = { name: 'a2ad-tasks-interop', version: '1' };
setTimeout(() => {
  console.error(`FAIL ${mode}: timed out after 60 s`);
  process.exit(1);
}, 60_000).unref();

let ids = 0;
async function rawDispatch(request, options) {
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': REVISION,
    'Mcp-Method': request.method,
  };
  const name = request.params?.taskId ?? request.params?.name;
  if (name) headers['Mcp-Name'] = name;
  const res = await fetch(`${base}/mcp`, {
    method: 'POST', headers, signal: options?.signal,
    body: JSON.stringify({ jsonrpc: '2.0', id: ++ids, ...request }),
  });
  return res.json();
}

function fail(check, why) {
  console.error(`FAIL ${check}: ${why}`);
  process.exit(1);
}

const client = new Client(clientInfo, { capabilities: caps, versionNegotiation: { mode: { pin: REVISION } } });
await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
if (client.getProtocolEra() !== 'modern') fail('connect', `era ${client.getProtocolEra()}, want modern (${REVISION})`);
if (!client.getServerCapabilities()?.extensions?.['io.modelcontextprotocol/tasks']) {
  fail('connect', `the server does not offer the extension: ${JSON.stringify(client.getServerCapabilities())}`);
}
// The one question asked (demo.ask's), answered "yes" through tasks/update.
const asked = [];
async function onInputRequest(request) {
  asked.push(request);
  return { action: 'accept', content: { answer: 'yes' } };
}
const session = createTaskSessionFromClient(client, {
  endpointId: 'a2ad-interop', rawDispatch, onInputRequest,
  v2RequestFraming: { protocolVersion: REVISION, clientInfo, clientCapabilities: caps },
});

try {
  if (mode === 'call') {
    const execution = await session.callTool('demo.sleep', { seconds: 3 });
    if (execution.kind !== 'task') fail('call', `answered ${execution.kind}, want a task handle`);
    await execution.handoff((ref) => console.log(JSON.stringify(ref)));
    console.error('ok call: demo.sleep answered a task handle, handed off');
  } else {
    const execution = await session.resumeTask(JSON.parse(reference));
    const { outcome } = await execution.settle();
    const result = resultFromTaskOutcome(outcome);
    if (result?.structuredContent?.slept !== 3) fail('resume', `result ${JSON.stringify(result)}, want {"slept":3}`);
    console.error('ok resume: the handle, resumed after a restart, settled with {"slept":3}');

    const long = await session.callTool('demo.sleep', { seconds: 30 });
    if (long.kind !== 'task') fail('cancel', `answered ${long.kind}, want a task handle`);
    await long.cancel();
    const cancelled = await long.settle();
    if (cancelled.outcome.status !== 'cancelled') fail('cancel', `outcome ${JSON.stringify(cancelled.outcome)}, want cancelled`);
    console.error('ok cancel: tasks/cancel ended the handle cancelled');

    const ask = await session.callTool('demo.ask', { question: 'Approve?' });
    if (ask.kind !== 'task') fail('input', `answered ${ask.kind}, want a task handle`);
    const answered = resultFromTaskOutcome((await ask.settle()).outcome);
    if (asked.length !== 1 || asked[0].kind !== 'elicitation' || asked[0].params?.message !== 'Approve?') {
      fail('input', `asked ${JSON.stringify(asked)}, want one elicitation "Approve?"`);
    }
    if (answered?.structuredContent?.answer !== 'yes') fail('input', `result ${JSON.stringify(answered)}, want {"answer":"yes"}`);
    console.error('ok input: the handle in input_required asked, tasks/update answered, it settled with {"answer":"yes"}');

    // Elicitation without the extension (2026-07-28's multi round-trip
    // requests): a client that declares elicitation alone gets demo.ask's
    // question as an input_required result; its elicitation/create handler
    // answers, and the client's retry settles the call.
    const plain = new Client(clientInfo, { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: REVISION } } });
    const elicited = [];
    plain.setRequestHandler('elicitation/create', async (request) => {
      elicited.push(request.params?.message);
      return { action: 'accept', content: { answer: 'yes' } };
    });
    await plain.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
    const mrtr = await plain.callTool({ name: 'demo.ask', arguments: { question: 'Approve?' } });
    if (elicited.length !== 1 || elicited[0] !== 'Approve?' || mrtr.structuredContent?.answer !== 'yes') {
      fail('elicit', `asked ${JSON.stringify(elicited)}, result ${JSON.stringify(mrtr)}, want one "Approve?" and {"answer":"yes"}`);
    }
    await plain.close();
    console.error('ok elicit: without the extension, the question came as input_required, the retry settled with {"answer":"yes"}');
  }
} finally {
  await session.close();
}
process.exit(0);
