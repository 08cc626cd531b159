// The official SDK's AgentConnection and two keys sharing a conversation, against a real
// `mail server` (tests/test_map_sdk.py starts it): MAP_URL its ws://HOST:PORT/map, MAP_KEY
// a user key, MAP_USER2_KEY another user's, MAP_AGENT_KEY a key of role agent.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { AgentConnection, ClientConnection } from '@multi-agent-protocol/sdk';
import { WebSocket } from 'ws';

globalThis.WebSocket ??= WebSocket;

const url = process.env.MAP_URL;
const userKey = process.env.MAP_KEY;
const user2Key = process.env.MAP_USER2_KEY;
const agentKey = process.env.MAP_AGENT_KEY;
assert.ok(url && userKey && user2Key && agentKey, 'tests/test_map_sdk.py sets MAP_* keys');

const hello = (text) => ({ contentType: 'text', content: { text } });

/** A client connected with `key`. */
function client(key, name) {
  return ClientConnection.connect(url, { name, auth: { method: 'api-key', credential: key } });
}

/** Resolves with the first message `agent` receives. */
function nextMessage(agent) {
  return new Promise((resolve) => {
    agent.onMessage(resolve);
  });
}

test('an AgentConnection registers, is listed, joins a conversation and records a turn', async () => {
  const agent = await AgentConnection.connect(url, {
    name: 'Reviewer',
    role: 'reviewer',
    auth: { method: 'api-key', credential: agentKey },
  });
  const user = await client(userKey, 'owner');
  try {
    assert.match(agent.agentId, /^agent-/);
    assert.equal(agent.state, 'idle');

    const listed = await user.listAgents();
    const ids = listed.agents.map((a) => a.id);
    assert.ok(ids.includes(agent.agentId), ids.join());
    assert.ok(ids.includes('supervisor'), 'the swarm\'s own agents are listed');
    const swarmAgent = listed.agents.find((a) => a.id === 'supervisor');
    assert.equal(swarmAgent.role, 'swarm');
    const { agent: got } = await user.getAgent(agent.agentId);
    assert.equal(got.name, 'Reviewer');
    assert.equal(got.role, 'reviewer');
    assert.match(got.ownerId, /^agent:/);

    // the user's conversation, shared with the agent by invitation
    const { conversation } = await user.createConversation({ subject: 'review' });
    await user.recordTurn({ conversationId: conversation.id, ...hello('please review') });
    const invited = await user.inviteToConversation({
      conversationId: conversation.id,
      participant: { id: `agent:${agent.agentId}`, role: 'worker' },
    });
    assert.equal(invited.participant.id, `agent:${agent.agentId}`);
    // the invitation made it a participant: it leaves, then joins back with a catch-up
    await agent.leaveConversation(conversation.id);
    const joined = await agent.joinConversation({
      conversationId: conversation.id,
      catchUp: { limit: 10 },
    });
    assert.equal(joined.participant.role, 'worker');
    assert.deepEqual(
      joined.history.map((t) => t.content.text),
      ['please review'],
    );
    const { turn } = await agent.recordTurn({
      conversationId: conversation.id,
      ...hello('looks good'),
    });
    assert.equal(turn.participantId, `agent:${agent.agentId}`);
    const { turns } = await user.listTurns({ conversationId: conversation.id });
    assert.deepEqual(
      turns.map((t) => [t.participantId, t.content.text]),
      [
        [turns[0].participantId, 'please review'],
        [`agent:${agent.agentId}`, 'looks good'],
      ],
    );

    // map/send to the agent: a map/message its onMessage handlers get
    const received = nextMessage(agent);
    const sent = await user.sendToAgent(agent.agentId, { task: 'review #2' });
    const message = await received;
    assert.equal(message.id, sent.messageId);
    assert.deepEqual(message.payload, { task: 'review #2' });
    assert.equal(message.from, turns[0].participantId);
  } finally {
    await agent.disconnect();
    await user.disconnect();
  }
  // its socket closed: it is no more
  const later = await client(userKey, 'later');
  try {
    const { agents } = await later.listAgents();
    assert.ok(!agents.some((a) => a.id === agent.agentId));
  } finally {
    await later.disconnect();
  }
});

test('two clients with different keys share one conversation by invitation', async () => {
  const owner = await client(userKey, 'owner');
  const guest = await client(user2Key, 'guest');
  try {
    const { conversation, participant: me } = await owner.createConversation({ subject: 'pair' });
    const cid = conversation.id;
    await assert.rejects(guest.getConversation(cid), (error) => error.code === 10000);

    const guestId = (await guest.createConversation({})).participant.id;
    await owner.inviteToConversation({ conversationId: cid, participant: { id: guestId } });
    const seen = await guest.getConversation(cid, { participants: true });
    assert.equal(seen.conversation.id, cid);
    assert.deepEqual(seen.participants.map((p) => p.id).sort(), [guestId, me.id].sort());

    await owner.recordTurn({ conversationId: cid, ...hello('hi') });
    await guest.recordTurn({ conversationId: cid, ...hello('hello back') });
    for (const side of [owner, guest]) {
      const { turns } = await side.listTurns({ conversationId: cid });
      assert.deepEqual(
        turns.map((t) => [t.participantId, t.content.text]),
        [
          [me.id, 'hi'],
          [guestId, 'hello back'],
        ],
      );
    }
  } finally {
    await owner.disconnect();
    await guest.disconnect();
  }
});

test('a guest lists the shared conversation and gets its turns live, not those hidden from it', async () => {
  const owner = await client(userKey, 'owner');
  const guest = await client(user2Key, 'guest');
  try {
    const { conversation, participant: me } = await owner.createConversation({ subject: 'live' });
    const cid = conversation.id;
    const guestId = (await guest.createConversation({})).participant.id;
    await owner.inviteToConversation({ conversationId: cid, participant: { id: guestId } });

    // mail/list: the owner's conversation, marked with the guest's participant there
    const { conversations } = await guest.listConversations({ limit: 1000 });
    const shared = conversations.find((c) => c.id === cid);
    assert.ok(shared, 'the shared conversation is listed');
    assert.equal(shared.createdBy, me.id);
    assert.equal(shared.participantCount, 2);
    assert.deepEqual(shared['x-guest'], { participantId: guestId, role: 'worker', leftAt: null });

    const subscription = await guest.subscribe({ eventTypes: ['mail.turn.added'] });
    const texts = [];
    const two = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`got ${texts.join()}`)), 10_000);
      subscription.on('event', (event) => {
        texts.push(event.data.turn.content.text);
        if (texts.length === 2) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    await owner.recordTurn({ conversationId: cid, ...hello('for everyone') });
    await owner.recordTurn({
      conversationId: cid,
      ...hello('for the owner only'),
      visibility: { type: 'participants', ids: [me.id] },
    });
    await owner.recordTurn({ conversationId: cid, ...hello('for everyone again') });
    await two;
    // the events come in order: the hidden turn, recorded between the two, never came
    assert.deepEqual(texts, ['for everyone', 'for everyone again']);
    assert.equal(subscription.lastSequenceNumber, 2);
  } finally {
    await owner.disconnect();
    await guest.disconnect();
  }
});

test('bad input gets clear errors', async () => {
  const user = await client(userKey, 'checks');
  const agent = await AgentConnection.connect(url, {
    name: 'Dup',
    auth: { method: 'api-key', credential: agentKey },
  });
  try {
    await assert.rejects(user.getAgent('nobody'), (error) => {
      assert.equal(error.code, 2001);
      assert.match(error.message, /no agent 'nobody'/);
      return true;
    });
    const { conversation } = await user.createConversation({});
    await assert.rejects(
      user.inviteToConversation({
        conversationId: conversation.id,
        participant: { id: 'agent:nobody' },
      }),
      (error) => error.code === 10005 && /no agent 'nobody'/.test(error.message),
    );
    await assert.rejects(
      agent.register({ agentId: agent.agentId }),
      (error) => error.code === 3000 && /already exists/.test(error.message),
    );
    await assert.rejects(
      user.callExtension('map/agents/register', { name: 'not an agent key' }),
      (error) => error.code === 1003 && /role 'agent'/.test(error.message),
    );
    await assert.rejects(
      user.sendToAgent('nobody', 'hello?'),
      (error) => error.code === 2001,
    );
  } finally {
    await agent.disconnect();
    await user.disconnect();
  }
});
