// One measured phase of benchmarks/map_websocket.py, the same code for every server.
// SUBSCRIBERS connections subscribe to `mail.turn.added`; CONNECTIONS writers each create
// a conversation and record their share of TURNS turns (`mail/turn`) one after the
// other. CLIENT `sdk` (the default) is the official SDK's ClientConnection; `raw` makes
// the same calls as plain JSON-RPC on a `ws` socket, without the SDK client's own cost.
// Prints one JSON line: {turns, seconds (first turn sent to last answer in), latenciesMs
// (per turn and subscriber: the turn's request handed to its socket to its map/event
// delivered), clientCpuMs (this process, while timed)}.
//
//   node bench/driver.mjs URL KEY CONNECTIONS TURNS [SUBSCRIBERS=1] [CLIENT=sdk|raw]
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';

import { ClientConnection } from '@multi-agent-protocol/sdk';
import { WebSocket } from 'ws';

globalThis.WebSocket ??= WebSocket; // Node 20 has no WebSocket of its own

const EVENTS_WITHIN_MS = 60_000;
const TURNS = { eventTypes: ['mail.turn.added'] };
const [url, key, connections, turns, subscribers = '1', mode = 'sdk'] = process.argv.slice(2);
const writers = Number(connections);
const total = Number(turns);
const readers = Number(subscribers);
if (!url || !key || !(writers >= 1) || !(total >= writers) || !(readers >= 0) || !['sdk', 'raw'].includes(mode)) {
  console.error(
    'usage: node bench/driver.mjs URL KEY CONNECTIONS TURNS [SUBSCRIBERS=1] [CLIENT=sdk|raw] (TURNS >= CONNECTIONS)',
  );
  process.exit(2);
}
const auth = { method: 'api-key', credential: key };

/** The SDK's client: its typed methods, and a subscription read as its docs do (its async
 * iterator: an `event` listener alone leaves the subscription's buffer to fill and drop). */
const sdk = {
  connect: () => ClientConnection.connect(url, { name: 'bench', auth }),
  async subscribe(client, onEvent) {
    const subscription = await client.subscribe(TURNS);
    return (async () => {
      for await (const event of subscription) onEvent(event);
    })();
  },
  create: (client, subject) => client.createConversation({ subject }),
  turn: (client, params) => client.recordTurn(params),
  close: (client) => client.disconnect(),
};

/** JSON-RPC over a `ws` socket by hand: requests by id, `map/event`s to their handler. */
class RawClient {
  constructor(ws) {
    this.ws = ws;
    this.ids = 0;
    this.pending = new Map(); // id -> {resolve, reject}
    this.handlers = new Map(); // subscriptionId -> onEvent
    ws.on('message', (data) => this.received(JSON.parse(data)));
  }

  received(message) {
    if (message.method === 'map/event') {
      this.handlers.get(message.params.subscriptionId)?.(message.params.event);
      return;
    }
    const waiting = this.pending.get(message.id);
    if (!waiting) return;
    this.pending.delete(message.id);
    if (message.error) waiting.reject(new Error(`${message.error.code}: ${message.error.message}`));
    else waiting.resolve(message.result);
  }

  call(method, params) {
    this.ids += 1;
    const id = this.ids;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }
}

const raw = {
  async connect() {
    const ws = new WebSocket(url);
    await once(ws, 'open');
    const client = new RawClient(ws);
    await client.call('map/connect', { protocolVersion: 1, participantType: 'client', name: 'bench', auth });
    return client;
  },
  async subscribe(client, onEvent) {
    const { subscriptionId } = await client.call('map/subscribe', { filter: TURNS });
    client.handlers.set(subscriptionId, onEvent);
    return new Promise(() => {}); // events come until the process ends
  },
  create: (client, subject) => client.call('mail/create', { subject }),
  turn: (client, params) => client.call('mail/turn', params),
  close: async (client) => client.ws.close(),
};

const api = mode === 'raw' ? raw : sdk;
const sentAt = new Map(); // turn text -> performance.now() when its request went out
const latenciesMs = [];
let expected = 0; // events still to come
let allArrived;
let failed;
const arrived = new Promise((resolve, reject) => {
  allArrived = resolve;
  failed = reject;
});

function onEvent(event) {
  const sent = sentAt.get(event.data?.turn?.content?.text);
  if (sent === undefined) return; // not a turn of this run
  latenciesMs.push(performance.now() - sent);
  expected -= 1;
  if (expected === 0) allArrived();
}

async function write(client, conversationId, count, prefix) {
  for (let i = 0; i < count; i += 1) {
    const text = `${prefix}-${i}`;
    sentAt.set(text, performance.now());
    const answer = await api.turn(client, { conversationId, contentType: 'text', content: { text } });
    if (answer?.turn?.content?.text !== text) {
      throw new Error(`mail/turn answered ${JSON.stringify(answer).slice(0, 300)}`);
    }
  }
}

const watchers = [];
for (let i = 0; i < readers; i += 1) {
  const client = await api.connect();
  api.subscribe(client, onEvent).catch(failed);
  watchers.push(client);
}
const clients = await Promise.all(Array.from({ length: writers }, api.connect));
const conversations = await Promise.all(clients.map((client, i) => api.create(client, `bench ${i}`)));
expected = total * readers;
if (expected === 0) allArrived();
const run = `${process.pid}-${Date.now()}`;
const cpu = process.cpuUsage();
const start = performance.now();
await Promise.all(
  clients.map((client, i) => {
    const share = Math.floor(total / writers) + (i < total % writers ? 1 : 0);
    return write(client, conversations[i].conversation.id, share, `${run}-${i}`);
  }),
);
const seconds = (performance.now() - start) / 1000;
const used = process.cpuUsage(cpu);
let timer;
const late = new Promise((_, reject) => {
  timer = setTimeout(
    () => reject(new Error(`${expected} of ${total * readers} events not delivered`)),
    EVENTS_WITHIN_MS,
  );
});
await Promise.race([arrived, late]);
clearTimeout(timer);
await Promise.all([...clients, ...watchers].map(api.close));
const figures = { turns: total, seconds, latenciesMs, clientCpuMs: (used.user + used.system) / 1000 };
// exit once written (a pipe takes it in parts): a raw subscriber's socket may still be closing
process.stdout.write(`${JSON.stringify(figures)}\n`, () => process.exit(0));
