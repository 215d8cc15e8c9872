// server.mjs: a2abench's JS reference server, the official A2A JS SDK
// (@a2a-js/sdk, pinned by package-lock.json) with its in-memory task store
// (it keeps nothing across restarts) and an executor that echoes, served by
// Express on 127.0.0.1. JSON-RPC is at /a2a, in A2A 1.0 and, through the
// SDK's v0.3 compatibility layer, in 0.3 (a2abench sends 0.3 message/send).
// It prints its base URL on stdout once it listens.
//
//   node server.mjs [-listen 127.0.0.1:0]
//
// The executor answers every message the way a2ad answers a call of
// demo::echo, as cmd/a2abench/sdkserver does: submitted, working, one
// artifact holding the "input" of the request's data part (or the whole
// data part without one), completed.
import { randomUUID } from 'node:crypto';
import express from 'express';
import { TaskState } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

let listen = '127.0.0.1:0';
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  if ((args[i] === '-listen' || args[i] === '--listen') && i + 1 < args.length) listen = args[++i];
  else {
    console.error(`jsserver: unknown argument ${args[i]}`);
    process.exit(2);
  }
}
const cut = listen.lastIndexOf(':');
const host = listen.slice(0, cut);
const port = Number(listen.slice(cut + 1));
if (host !== '127.0.0.1' && host !== 'localhost' && host !== '[::1]') {
  console.error(`jsserver: ${listen} is not a loopback address`);
  process.exit(2);
}

const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() });

const echo = {
  async execute(ctx, bus) {
    let input = {};
    for (const p of ctx.userMessage?.parts ?? []) {
      if (p.content?.$case === 'data') {
        const d = p.content.value ?? {};
        input = d.input && typeof d.input === 'object' ? d.input : d;
        break;
      }
    }
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    if (!ctx.task) {
      bus.publish({ kind: 'task', data: { id: ctx.taskId, contextId: ctx.contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [], history: [ctx.userMessage], metadata: undefined } });
    }
    bus.publish({ kind: 'statusUpdate', data: { ...ids, status: status(TaskState.TASK_STATE_WORKING), metadata: undefined } });
    bus.publish({ kind: 'artifactUpdate', data: { ...ids, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: randomUUID(), name: 'demo::echo', description: '', metadata: undefined, extensions: [],
        parts: [{ content: { $case: 'data', value: input }, metadata: undefined, filename: '', mediaType: '' }] } } });
    bus.publish({ kind: 'statusUpdate', data: { ...ids, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined } });
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.publish({ kind: 'statusUpdate', data: { taskId, contextId: '', status: status(TaskState.TASK_STATE_CANCELED), metadata: undefined } });
    bus.finished();
  },
};

const app = express();
const server = app.listen(port, host, () => {
  const { port: p } = server.address();
  const url = `http://127.0.0.1:${p}`;
  const card = {
    name: 'a2abench JS SDK echo', description: 'echoes its input', version: '1.0.0', provider: undefined,
    supportedInterfaces: [
      { url: `${url}/a2a`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: `${url}/a2a`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {}, securityRequirements: [], signatures: [],
    defaultInputModes: ['application/json'], defaultOutputModes: ['application/json'],
    skills: [{ id: 'demo::echo', name: 'echo', description: 'echoes its input', tags: ['demo'], examples: [],
      inputModes: [], outputModes: [], securityRequirements: [] }],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), echo);
  app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
  console.log(url);
});
server.on('error', (err) => {
  console.error(`jsserver: ${err.message}`);
  process.exit(1);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
