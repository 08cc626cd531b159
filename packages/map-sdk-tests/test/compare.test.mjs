// The same MAP Mail scenario against a real `mail server` and the official SDK's reference
// server (`@multi-agent-protocol/sdk/server`'s MAPServer, test/_reference.mjs): each step
// succeeds or fails on both (error codes aside: the reference answers every mail error with
// -32603), and our results, and the first mail.* event of each type a subscription gets,
// have every field the reference's have, recursively, with the same JSON types. The
// differences that remain are listed in docs/map-mail.md.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { ClientConnection, waitForOpen, websocketStream } from '@multi-agent-protocol/sdk';
import { WebSocket } from 'ws';

import { startReference } from './_reference.mjs';

globalThis.WebSocket ??= WebSocket;

const url = process.env.MAP_URL;
const key = process.env.MAP_KEY;
assert.ok(url && key, 'MAP_URL and MAP_KEY must be set (tests/test_map_sdk.py sets them)');

/**
 * Steps whose outcome differs on purpose, by step name: what the reference does. Each is a
 * row of the differences table of docs/map-mail.md.
 */
const OUTCOMES_DIFFER = {
  // the reference checks no membership: a caller that left records turns; we answer 10002
  'turn after leave': 'succeeds',
  // the reference records a turn in a completed conversation; we answer 10001
  'turn after close': 'succeeds',
};

/** Fields of the reference's results we answer otherwise on purpose (path: why). */
const FIELDS_DIFFER = {
  // the SDK's type says 1 (ProtocolVersion), which we answer; the reference "2024-12"
  'connect.protocolVersion': 'number',
  // ClientConnection.disconnect() resolves with the reference's resumeToken; we keep no
  // session to resume (a socket is a session)
  disconnect: 'undefined',
};

/**
 * How our results are read before they are compared: `mail/get`'s recentTurns are the last
 * N turns oldest first (ours), newest first (the reference's).
 */
function normalized(name, result) {
  if (name === 'get' && result?.recentTurns) return { ...result, recentTurns: [...result.recentTurns].reverse() };
  return result;
}

const text = (value) => ({ contentType: 'text', content: { text: value } });

const MAIL_EVENTS = [
  'mail.created',
  'mail.closed',
  'mail.participant.joined',
  'mail.participant.left',
  'mail.turn.added',
  'mail.thread.created',
];

/** Resolves once `subscription` has delivered an event of `type` (10 s at most). */
function eventOf(subscription, type) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} event`)), 10_000);
    subscription.on('event', (event) => {
      if (event.type === type) {
        clearTimeout(timer);
        resolve(event);
      }
    });
  });
}

/**
 * Runs the scenario against the server at `at`; resolves with `{step: outcome}` and, under
 * `events`, the first event of each type its subscription got.
 */
async function scenario(at, credential) {
  const ws = new WebSocket(at);
  await waitForOpen(ws);
  const client = new ClientConnection(websocketStream(ws), { name: 'compare' });
  const outcomes = {};
  async function step(name, call) {
    try {
      outcomes[name] = { ok: true, result: await call() };
    } catch (error) {
      outcomes[name] = { ok: false, code: error.code, message: error.message, data: error.data };
    }
    return outcomes[name].result;
  }
  try {
    await step('connect', () => client.connect({ auth: { method: 'api-key', credential } }));
    const subscription = await client.subscribe({ eventTypes: MAIL_EVENTS });
    const events = {};
    subscription.on('event', (event) => {
      events[event.type] ??= event;
    });
    const closedEvent = eventOf(subscription, 'mail.closed');
    const created = await step('create', () =>
      client.createConversation({
        type: 'multi-agent',
        subject: 'compare',
        metadata: { run: 'compare' },
        initialTurn: text('Hello.'),
      }),
    );
    const cid = created.conversation.id;
    const c = { conversationId: cid };
    const first = await step('turn', () => client.recordTurn({ ...c, ...text('We ship on Friday.') }));
    await step('turn with visibility', () =>
      client.recordTurn({
        ...c,
        ...text('Only for me.'),
        visibility: { type: 'participants', ids: [created.participant.id] },
      }),
    );
    await step('turn with metadata', () =>
      client.recordTurn({ ...c, contentType: 'data', content: { n: 1 }, metadata: { tool: 'x' } }),
    );
    const { thread } = await step('thread', () =>
      client.createThread({ ...c, rootTurnId: first.turn.id, subject: 'details' }),
    );
    const inThread = await step('turn in thread', () =>
      client.recordTurn({ ...c, ...text('Which Friday?'), threadId: thread.id, inReplyTo: first.turn.id }),
    );
    await step('nested thread', () =>
      client.createThread({ ...c, rootTurnId: inThread.turn.id, parentThreadId: thread.id }),
    );
    await step('thread list', () => client.listThreads(c));
    await step('thread list children', () => client.listThreads({ ...c, parentThreadId: thread.id }));
    await step('get', () =>
      client.getConversation(cid, { participants: true, threads: true, recentTurns: 2, stats: true }),
    );
    await step('get unknown', () => client.getConversation('conv-unknown'));
    await step('turns page 1', () => client.listTurns({ ...c, limit: 2 }));
    await step('turns all', () => client.listTurns({ ...c, limit: 10 }));
    await step('turns desc', () => client.listTurns({ ...c, order: 'desc', limit: 2 }));
    await step('turns after turn', () => client.listTurns({ ...c, filter: { afterTurnId: first.turn.id } }));
    await step('turns in thread', () => client.listTurns({ ...c, filter: { threadId: thread.id } }));
    await step('turns by type', () => client.listTurns({ ...c, filter: { contentTypes: ['data'] } }));
    const second = await step('second conversation', () => client.createConversation({ type: 'multi-agent' }));
    const other = { conversationId: second.conversation.id };
    await step('leave second', () => client.leaveConversation(other.conversationId));
    await step('turn after leave', () => client.recordTurn({ ...other, ...text('Gone.') }));
    await step('child conversation', () =>
      client.createConversation({ type: 'multi-agent', parentConversationId: cid }),
    );
    await step('list page', () => client.listConversations({ filter: since, limit: 1 }));
    await step('list children', () => client.listConversations({ filter: { parentConversationId: cid } }));
    const since = { createdAfter: created.conversation.createdAt - 1 };
    await step('list by status', () => client.listConversations({ filter: { ...since, status: ['active'] } }));
    await step('replay', () => client.replayConversation({ ...c, limit: 2 }));
    await step('replay from turn', () => client.replayConversation({ ...c, fromTurnId: first.turn.id }));
    await step('summary', () => client.getConversationSummary(c));
    await step('invite', () => client.inviteToConversation({ ...c, participant: { id: 'agent-helper', role: 'worker' } }));
    await step('invite again', () => client.inviteToConversation({ ...c, participant: { id: 'agent-helper' } }));
    await step('leave', () => client.leaveConversation(cid, 'done for now'));
    await step('join', () => client.joinConversation({ ...c, role: 'moderator', catchUp: { from: first.turn.id, limit: 10 } }));
    await step('join again', () => client.joinConversation({ ...c }));
    await step('thread unknown root', () => client.createThread({ ...c, rootTurnId: 'turn-unknown' }));
    await step('close', () => client.closeConversation(cid, 'finished'));
    await closedEvent; // the events of every step before it are in
    await step('turn after close', () => client.recordTurn({ ...c, ...text('Too late.') }));
    outcomes.events = { ok: true, result: events };
    await step('disconnect', () => client.disconnect());
  } finally {
    ws.close();
  }
  return outcomes;
}

function kind(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Where `ours` lacks a field of `theirs` or has it with another JSON type. */
function missing(ours, theirs, path = '') {
  if (kind(ours) !== kind(theirs)) return [`${path || '.'}: ${kind(ours)}, the reference ${kind(theirs)}`];
  if (kind(theirs) === 'array') {
    if (ours.length !== theirs.length) return [`${path}: ${ours.length} items, the reference ${theirs.length}`];
    return theirs.flatMap((item, at) => missing(ours[at], item, `${path}[${at}]`));
  }
  if (kind(theirs) !== 'object') return [];
  const found = [];
  for (const [name, value] of Object.entries(theirs)) {
    if (name === '_meta') continue;
    if (!(name in ours)) found.push(`${path}.${name}: missing`);
    else found.push(...missing(ours[name], value, `${path}.${name}`));
  }
  return found;
}

let reference;
let ours;
let theirs;

before(async () => {
  reference = await startReference();
  theirs = await scenario(reference.url, reference.key);
  ours = await scenario(url, key);
});

after(async () => {
  await reference?.close();
});

test('every step has the same outcome on both servers', () => {
  assert.deepEqual(Object.keys(ours), Object.keys(theirs));
  for (const [name, outcome] of Object.entries(theirs)) {
    const expected = OUTCOMES_DIFFER[name] === undefined ? outcome.ok : !outcome.ok;
    assert.equal(ours[name].ok, expected, `${name}: ours ${JSON.stringify(ours[name])}, the reference ${JSON.stringify(outcome)}`);
  }
});

test('our results have every field of the reference, with the same JSON types', () => {
  const found = [];
  for (const [name, outcome] of Object.entries(theirs)) {
    if (outcome.ok && ours[name].ok) found.push(...missing(normalized(name, ours[name].result), outcome.result, name));
  }
  const listed = found.filter((problem) => !Object.keys(FIELDS_DIFFER).some((path) => problem.startsWith(`${path}:`)));
  assert.deepEqual(listed, []);
  // and each difference listed is still one
  for (const [path, type] of Object.entries(FIELDS_DIFFER)) {
    assert.ok(found.some((problem) => problem.startsWith(`${path}: ${type}`)), `${path} no longer differs`);
  }
});

test('mail errors: ours carry the seed code and data.name, the reference -32603', () => {
  const expected = {
    'get unknown': 'CONVERSATION_NOT_FOUND',
    'invite again': 'PARTICIPANT_ALREADY_JOINED',
    'join again': 'PARTICIPANT_ALREADY_JOINED',
    'thread unknown root': 'TURN_NOT_FOUND',
  };
  for (const [name, errorName] of Object.entries(expected)) {
    assert.equal(theirs[name].code, -32603, name);
    assert.ok(ours[name].code >= 10000 && ours[name].code <= 10010, `${name}: ${ours[name].code}`);
    assert.equal(ours[name].data.name, errorName, name);
  }
});
