// The official MAP SDK (@multi-agent-protocol/sdk 0.1.15) against a real `mail server`
// (tests/test_map_sdk.py starts it): MAP_URL is its ws://HOST:PORT/map, MAP_KEY a user key.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ClientConnection, waitForOpen, websocketStream } from '@multi-agent-protocol/sdk';
import { WebSocket } from 'ws';

// The SDK opens its socket with the global WebSocket: Node 22 has one, Node 20 does not.
globalThis.WebSocket ??= WebSocket;

const url = process.env.MAP_URL;
const key = process.env.MAP_KEY;
assert.ok(url && key, 'MAP_URL and MAP_KEY must be set (tests/test_map_sdk.py sets them)');

/** Resolves with the first `count` events `subscription` delivers. */
function take(subscription, count) {
  return new Promise((resolve) => {
    const seen = [];
    subscription.on('event', (event) => {
      seen.push(event);
      if (seen.length === count) resolve(seen);
    });
  });
}

test('connect with an API key, watch a task conversation appear live, disconnect', async () => {
  const client = await ClientConnection.connect(url, {
    name: 'docs example',
    auth: { method: 'api-key', credential: key },
  });
  assert.match(client.sessionId, /^session-/);
  assert.equal(client.serverCapabilities.mail.enabled, true);

  const subscription = await client.subscribe({ eventTypes: ['mail.created', 'mail.turn.added'] });
  const events = take(subscription, 2);
  // startTask (our extension of mail/create): the initial turn runs as a task of the swarm
  const created = await client.createConversation({
    subject: 'arithmetic',
    startTask: true,
    initialTurn: { contentType: 'text', content: { text: 'What is 6*7?' } },
  });
  const [first, second] = await events;
  await client.disconnect();

  const cid = created.conversation.id;
  assert.equal(created.task.status, 'completed');
  assert.match(created.task.response, /42/);
  assert.equal(first.type, 'mail.created');
  assert.equal(first.data.conversationId, cid);
  assert.equal(second.type, 'mail.turn.added');
  assert.equal(second.data.turn.conversationId, cid);
  assert.equal(second.data.turn.content.text, 'What is 6*7?');
  assert.equal(client.isConnected, false);
});

test('connect without auth, then authenticate', async () => {
  const client = await ClientConnection.connect(url, { name: 'late auth' });
  const before = client.sessionId;
  await assert.rejects(client.listConversations(), (error) => error.code === 1000);
  const refused = await client.authenticate({ method: 'bearer', credential: 'not-a-key' });
  const accepted = await client.authenticate({ method: 'bearer', credential: key });
  const listed = await client.listConversations({ limit: 1 });
  await client.disconnect();

  assert.equal(refused.success, false);
  assert.equal(refused.error.code, 'invalid_credentials');
  assert.equal(accepted.success, true);
  assert.equal(accepted.sessionId, before);
  assert.match(accepted.participantId, /^user:/);
  assert.ok(Array.isArray(listed.conversations));
});

test('a wrong key is refused by map/connect', async () => {
  // the socket made by hand: ClientConnection.connect leaves its socket open on a refusal
  const ws = new WebSocket(url);
  await waitForOpen(ws);
  const client = new ClientConnection(websocketStream(ws));
  try {
    await assert.rejects(
      client.connect({ auth: { method: 'api-key', credential: 'not-a-key' } }),
      (error) => error.code === 1001 && /invalid API key/.test(error.message),
    );
  } finally {
    ws.close();
  }
});

test('requests on one connection run side by side', async () => {
  const client = await ClientConnection.connect(url, { auth: { method: 'api-key', credential: key } });
  const { conversation } = await client.createConversation({ subject: 'side by side' });
  // a task and two turns at once: the turns do not wait for the task
  const [sent, ...turns] = await Promise.all([
    client.send({ agent: 'supervisor' }, { body: 'What is 2 + 3?' }),
    client.recordTurn({ conversationId: conversation.id, contentType: 'text', content: { text: 'a' } }),
    client.recordTurn({ conversationId: conversation.id, contentType: 'text', content: { text: 'b' } }),
  ]);
  const listed = await client.listTurns({ conversationId: conversation.id });
  await client.disconnect();

  assert.equal(sent.status, 'completed');
  assert.deepEqual(turns.map((t) => t.turn.content.text), ['a', 'b']);
  assert.deepEqual(listed.turns.map((t) => t.content.text), ['a', 'b']);
});
