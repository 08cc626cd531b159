// Every mail/* operation through the official SDK's typed methods of ClientConnection
// (@multi-agent-protocol/sdk 0.1.15) against a real `mail server`, checking the fields of the
// SDK's result types; and a dropped socket resumed without loss after the last eventId seen
// (the SDK's own `reconnection` fails in 0.1.15: the test shows how, and resumes as it would).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ClientConnection, waitForOpen, websocketStream } from '@multi-agent-protocol/sdk';
import { WebSocket } from 'ws';

globalThis.WebSocket ??= WebSocket;

const url = process.env.MAP_URL;
const key = process.env.MAP_KEY;
assert.ok(url && key, 'MAP_URL and MAP_KEY must be set (tests/test_map_sdk.py sets them)');

const auth = { method: 'api-key', credential: key };

function text(value) {
  return { contentType: 'text', content: { text: value } };
}

function isTime(value) {
  return Number.isInteger(value) && value > 1_600_000_000_000;
}

test('every mail/* operation answers the SDK result types', async () => {
  const client = await ClientConnection.connect(url, { name: 'operations', auth });
  // mail/create
  const created = await client.createConversation({
    type: 'multi-agent',
    subject: 'operations',
    initialParticipants: [{ id: 'writer', role: 'worker' }],
    initialTurn: text('Hello.'),
  });
  const { conversation, participant, initialTurn } = created;
  const cid = conversation.id;
  assert.equal(conversation.type, 'multi-agent');
  assert.equal(conversation.status, 'active');
  assert.equal(conversation.subject, 'operations');
  assert.equal(conversation.participantCount, 2);
  assert.ok(isTime(conversation.createdAt) && isTime(conversation.updatedAt));
  assert.match(conversation.createdBy, /^user:/);
  assert.deepEqual(conversation.metadata, {});
  assert.equal(participant.id, conversation.createdBy);
  assert.equal(participant.type, 'user');
  assert.equal(participant.role, 'initiator');
  assert.equal(participant.permissions.canInvite, true);
  assert.ok(isTime(participant.joinedAt));
  assert.equal(initialTurn.participant, participant.id);
  assert.deepEqual(initialTurn.source, { type: 'explicit', method: 'mail/turn' });
  assert.equal(typeof initialTurn.status, 'string');

  // mail/turn, with the SDK's visibility
  const only = { type: 'participants', ids: ['writer'] };
  const { turn: hidden } = await client.recordTurn({ conversationId: cid, ...text('For the writer.'), visibility: only });
  assert.deepEqual(hidden.visibility.ids, ['writer']);
  // mail/thread/create, mail/thread/list
  const { thread } = await client.createThread({ conversationId: cid, rootTurnId: initialTurn.id, subject: 'side' });
  assert.equal(thread.rootTurnId, initialTurn.id);
  assert.equal(thread.turnCount, 0);
  assert.equal(thread.participantCount, 0);
  assert.ok(isTime(thread.updatedAt));
  await client.recordTurn({ conversationId: cid, ...text('In the thread.'), threadId: thread.id });
  const threads = await client.listThreads({ conversationId: cid });
  assert.equal(threads.hasMore, false);
  assert.equal(threads.threads[0].turnCount, 1);
  assert.equal(threads.threads[0].participantCount, 1);

  // mail/turns/list: pages and the SDK's filters
  const page = await client.listTurns({ conversationId: cid, limit: 2 });
  assert.equal(page.turns.length, 2);
  assert.equal(page.hasMore, true);
  assert.equal(typeof page.nextCursor, 'string');
  const after = await client.listTurns({ conversationId: cid, filter: { afterTurnId: initialTurn.id } });
  assert.deepEqual(after.turns.map((t) => t.content.text), ['For the writer.', 'In the thread.']);
  assert.equal(after.hasMore, false);
  const inThread = await client.listTurns({ conversationId: cid, filter: { threadId: thread.id } });
  assert.deepEqual(inThread.turns.map((t) => t.participant), [participant.id]);

  // mail/get with every include
  const got = await client.getConversation(cid, { participants: true, threads: true, recentTurns: 2, stats: true });
  assert.equal(got.conversation.id, cid);
  assert.deepEqual(got.participants.map((p) => [p.id, p.type]), [[participant.id, 'user'], ['writer', 'agent']]);
  assert.equal(got.threads.length, 1);
  assert.equal(got.recentTurns.length, 2);
  assert.deepEqual(got.stats, {
    ...got.stats,
    totalTurns: 3,
    turnsByContentType: { text: 3 },
    activeParticipants: 2,
    threadCount: 1,
  });

  // mail/list with the SDK's filters
  const child = await client.createConversation({ subject: 'child', parentConversationId: cid });
  const children = await client.listConversations({ filter: { parentConversationId: cid } });
  assert.deepEqual(children.conversations.map((c) => c.id), [child.conversation.id]);
  assert.equal(children.hasMore, false);
  const recent = await client.listConversations({ filter: { createdAfter: conversation.createdAt - 1 }, limit: 1 });
  assert.equal(recent.conversations.length, 1);
  assert.equal(recent.hasMore, true);

  // mail/summary
  const summary = await client.getConversationSummary({ conversationId: cid });
  assert.equal(typeof summary.summary, 'string');
  assert.equal(summary.generated, true);
  assert.ok(isTime(summary.cachedAt));
  assert.equal((await client.getConversationSummary({ conversationId: cid })).generated, false);

  // mail/replay
  const replayed = await client.replayConversation({ conversationId: cid, fromTurnId: initialTurn.id, limit: 1 });
  assert.equal(replayed.turns[0].id, hidden.id);
  assert.equal(replayed.hasMore, true);
  assert.equal(replayed.missedCount, 2);

  // mail/invite, mail/leave, mail/join (catching up from a turn id), mail/close
  const invited = await client.inviteToConversation({ conversationId: cid, participant: { id: 'reviewer', role: 'observer' } });
  assert.equal(invited.invited, true);
  assert.equal(invited.participant.type, 'agent');
  assert.equal(invited.participant.role, 'observer');
  const left = await client.leaveConversation(cid, 'stepping out');
  assert.equal(left.success, true);
  assert.ok(isTime(left.leftAt));
  const joined = await client.joinConversation({
    conversationId: cid,
    role: 'moderator',
    catchUp: { from: hidden.id, includeSummary: true },
  });
  assert.equal(joined.participant.role, 'moderator');
  assert.deepEqual(joined.history.map((t) => t.content.text), ['In the thread.']);
  assert.equal(typeof joined.summary, 'string');
  const closed = await client.closeConversation(cid, 'done');
  assert.equal(closed.conversation.status, 'completed');
  assert.ok(isTime(closed.conversation.closedAt));
  await assert.rejects(
    client.recordTurn({ conversationId: cid, ...text('Too late.') }),
    (error) => error.code === 10001 && error.data.name === 'CONVERSATION_CLOSED',
  );
  await client.disconnect();
});

/** Resolves with the text of the next `count` turn events of `subscription`. */
async function next(subscription, count) {
  const seen = [];
  for await (const event of subscription) {
    seen.push(event.data.turn.content.text);
    if (seen.length === count) return seen;
  }
  return seen;
}

function once(client, type) {
  return new Promise((resolve) => {
    const off = client.onReconnection((event) => {
      if (event.type === type) {
        off();
        resolve(event);
      }
    });
  });
}

test('a dropped socket is resumed without loss after the eventId last seen', async () => {
  // the socket made here, so that the test can drop it, and the next one opened only once
  // the events of the time away have happened
  let reopen;
  const allowed = new Promise((resolve) => {
    reopen = resolve;
  });
  const ws = new WebSocket(url);
  await waitForOpen(ws);
  const sockets = [ws];
  const client = new ClientConnection(websocketStream(ws), {
    name: 'resumed',
    createStream: async () => {
      await allowed;
      const again = new WebSocket(url);
      sockets.push(again);
      await waitForOpen(again);
      return websocketStream(again);
    },
    reconnection: { enabled: true, maxRetries: 1, baseDelayMs: 10, jitter: false },
  });
  await client.connect({ auth });
  const other = await ClientConnection.connect(url, { name: 'other', auth });
  const { conversation } = await other.createConversation({ subject: 'resumed' });
  const say = (value) => other.recordTurn({ conversationId: conversation.id, ...text(value) });
  const filter = { eventTypes: ['mail.turn.added'], mail: { conversationId: conversation.id } };

  const first = await client.subscribe(filter);
  await say('a');
  assert.deepEqual(await next(first, 1), ['a']);
  const seen = first.lastEventId;
  const dropped = once(client, 'disconnected');
  const failed = once(client, 'reconnectFailed');
  ws.terminate(); // the connection drops: no map/disconnect
  await dropped;
  await say('b'); // while the client is away
  await say('c');
  reopen();
  // SDK 0.1.15's own reconnection never reconnects: its connection is closed for good
  // before it tries (BaseConnection.reconnect refuses a closed one), whatever the server
  assert.match((await failed).error.message, /permanently closed/);

  // what its restore does (subscribe, then map/replay after the last eventId), on a new
  // connection
  const resumed = await ClientConnection.connect(url, { name: 'resumed again', auth });
  const second = await resumed.subscribe(filter);
  const replayed = await resumed.replay({ afterEventId: seen, filter });
  assert.deepEqual(replayed.events.map((e) => e.event.data.turn.content.text), ['b', 'c']);
  assert.equal(replayed.hasMore, false);
  await say('d');
  assert.deepEqual(await next(second, 1), ['d']); // live again: nothing lost, nothing twice
  const ids = [...replayed.events.map((e) => e.eventId), second.lastEventId];
  assert.deepEqual(ids.map(BigInt), ids.map(BigInt).sort((x, y) => (x < y ? -1 : 1)));
  assert.ok(BigInt(ids[0]) > BigInt(seen));
  await resumed.disconnect();
  await other.disconnect();
  for (const socket of sockets) socket.close(); // the one the SDK opened and then left
});
