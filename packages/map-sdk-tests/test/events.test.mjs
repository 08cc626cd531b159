// Events a client can trust, through the official SDK (0.1.15) against a real `mail server`:
// map/event notifications carry sequenceNumber and eventId (the SDK's Subscription reads them:
// lastSequenceNumber, lastEventId), and client.replay / replayAll (map/replay) return the
// events after an eventId, as the SDK's reconnection does.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ClientConnection } from '@multi-agent-protocol/sdk';
import { WebSocket } from 'ws';

globalThis.WebSocket ??= WebSocket;

const url = process.env.MAP_URL;
const key = process.env.MAP_KEY;
assert.ok(url && key, 'MAP_URL and MAP_KEY must be set (tests/test_map_sdk.py sets them)');

const TURNS = { eventTypes: ['mail.turn.added'] };

/** Resolves with what the subscription says as each of its next `count` events arrives. */
function positions(subscription, count) {
  return new Promise((resolve, reject) => {
    const seen = [];
    const timer = setTimeout(() => reject(new Error(`${seen.length} of ${count} events`)), 10_000);
    const handler = (event) => {
      seen.push({
        text: event.data.turn.content.text,
        sequenceNumber: subscription.lastSequenceNumber,
        eventId: subscription.lastEventId,
      });
      if (seen.length === count) {
        clearTimeout(timer);
        subscription.off('event', handler);
        resolve(seen);
      }
    };
    subscription.on('event', handler);
  });
}

async function say(client, conversationId, ...texts) {
  for (const text of texts) {
    await client.recordTurn({ conversationId, contentType: 'text', content: { text } });
  }
}

test('notifications carry a sequence number and an eventId; replay returns the events after one', async () => {
  const client = await ClientConnection.connect(url, { auth: { method: 'api-key', credential: key } });
  const subscription = await client.subscribe(TURNS);
  const { conversation } = await client.createConversation({ subject: 'trust' });
  const three = positions(subscription, 3);
  await say(client, conversation.id, 'n1', 'n2', 'n3');
  const seen = await three;
  const replayed = await client.replay({ afterEventId: seen[0].eventId, filter: TURNS, limit: 10 });
  const all = [];
  for await (const item of client.replayAll({ filter: TURNS })) all.push(item);
  const next = positions(subscription, 1);
  await say(client, conversation.id, 'n4');
  const [live] = await next;
  await client.disconnect();

  assert.deepEqual(seen.map((s) => [s.text, s.sequenceNumber]), [['n1', 1], ['n2', 2], ['n3', 3]]);
  assert.ok(seen.every((s) => /^\d+$/.test(s.eventId)));
  assert.equal(new Set(seen.map((s) => s.eventId)).size, 3);
  assert.equal(replayed.hasMore, false);
  assert.deepEqual(replayed.events.map((e) => e.eventId), [seen[1].eventId, seen[2].eventId]);
  assert.deepEqual(replayed.events.map((e) => e.event.data.turn.content.text), ['n2', 'n3']);
  // replayAll pages through everything the server keeps for this caller: ours are the last
  assert.deepEqual(all.slice(-3).map((e) => e.eventId), seen.map((s) => s.eventId));
  assert.deepEqual([live.text, live.sequenceNumber], ['n4', 4]);
});
