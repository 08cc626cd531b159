// End to end: a request whose answer was lost is sent again with the same task id (a
// follow-up with the same Idempotency-Key), so the task runs once; a call that gives up
// cancels its task; a stream whose closing event the server holds back (its store fails)
// asks again. The answers are lost by a proxy that drops the client's connection once the
// server took the request, before any answer byte.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { APICallError, generateText, streamText, type LanguageModel } from 'ai';
import { createMAIL } from '../src/index';
import { startDroppingProxy, type DroppingProxy } from './helpers/dropping-proxy';
import './helpers/quiet';
import { getTask, pollUntil, startMailServer, type RunningServer } from './helpers/server';
import { lockSqlite } from './helpers/store-lock';

const taskIdOf = (metadata: unknown) => (metadata as { mail?: { taskId?: string } } | undefined)?.mail?.taskId;

/** The caller's task ids (`GET /tasks`). */
async function taskIds(server: RunningServer): Promise<string[]> {
  const response = await fetch(`${server.url}/tasks?events=false`, { headers: { Authorization: `Bearer ${server.userKey}` } });
  assert.equal(response.status, 200);
  return Object.keys((await response.json()) as Record<string, unknown>);
}

/** How many messages of the caller a task got: one per run of a request. */
async function userMessages(server: RunningServer, taskId: string): Promise<number> {
  const task = (await getTask(server, taskId)) as { events: { event: string; data: unknown }[] };
  return task.events.filter((e) => {
    if (e.event !== 'new_message') return false;
    const data = (typeof e.data === 'string' ? JSON.parse(e.data) : e.data) as {
      extra_data: { full_message: { message: { sender: { address_type: string } } } };
    };
    return data.extra_data.full_message.message.sender.address_type === 'user';
  }).length;
}

/** A new task of the server appeared (the proxy then drops the connection). */
function aNewTask(server: RunningServer, known: string[]) {
  return async () => (await taskIds(server)).some((id) => !known.includes(id));
}

type Run = (model: LanguageModel, extra?: { providerOptions?: { mail: { taskId: string } } }) => Promise<{ text: string; taskId?: string }>;

const viaGenerateText: Run = async (model, extra = {}) => {
  const result = await generateText({ model, prompt: 'take your time', ...extra });
  return { text: result.text, taskId: taskIdOf(result.providerMetadata) };
};

const viaStreamText: Run = async (model, extra = {}) => {
  const errors: unknown[] = [];
  const result = streamText({ model, prompt: 'take your time', ...extra, onError: ({ error }) => void errors.push(error) });
  // (a failed call: the error the stream reported, rather than "no output")
  const text = await Promise.resolve(result.text).catch((e: unknown) => Promise.reject(errors[0] ?? e));
  assert.deepEqual(errors, []);
  return { text, taskId: taskIdOf(await result.providerMetadata) };
};

const CALLS: [string, Run][] = [['generateText', viaGenerateText], ['streamText', viaStreamText]];

describe('an answer lost after the server took the request (the slow swarm)', () => {
  let server: RunningServer;
  before(async () => {
    server = await startMailServer({ swarm: 'slow' });
  });
  after(async () => server?.stop());

  for (const [name, run] of CALLS) {
    test(`${name} gets the first task's answer; one task, run once`, async () => {
      const known = await taskIds(server);
      const proxy = await startDroppingProxy(server.url, { accepted: aNewTask(server, known) });
      try {
        const mail = createMAIL({ baseUrl: proxy.url, authToken: server.userKey, retryDelayMs: 50 });
        const { text, taskId } = await run(mail('slow'));
        assert.equal(text, 'done waiting');
        assert.equal(proxy.dropped(), 1);
        assert.equal(proxy.attempts.length, 2);
        assert.equal(proxy.attempts[1]!.body, proxy.attempts[0]!.body, 'the same request, the same task id');
        const created = (await taskIds(server)).filter((id) => !known.includes(id));
        assert.deepEqual(created, [JSON.parse(proxy.attempts[0]!.body).task_id]);
        assert.equal(taskId, created[0]);
        assert.equal(await userMessages(server, created[0]!), 1);
      } finally {
        await proxy.close();
      }
    });

    test(`a follow-up through ${name} is delivered once (its Idempotency-Key is sent again)`, async () => {
      const direct = createMAIL({ baseUrl: server.url, authToken: server.userKey });
      const first = await generateText({ model: direct('slow'), prompt: 'first' });
      const taskId = taskIdOf(first.providerMetadata)!;
      // no `accepted`: the drop comes with the server's first answer byte (for JSON, once
      // the follow-up's turn ended: only the key tells the retry from a new follow-up)
      const proxy = await startDroppingProxy(server.url);
      try {
        const mail = createMAIL({ baseUrl: proxy.url, authToken: server.userKey, retryDelayMs: 50 });
        const { text, taskId: continued } = await run(mail('slow'), { providerOptions: { mail: { taskId } } });
        assert.equal(text, 'done waiting');
        assert.equal(continued, taskId);
        assert.equal(proxy.attempts.length, 2);
        const [one, two] = proxy.attempts;
        assert.ok(one!.headers['idempotency-key']);
        assert.equal(two!.headers['idempotency-key'], one!.headers['idempotency-key']);
        assert.equal(two!.body, one!.body);
        assert.equal(JSON.parse(one!.body).resume_from, 'user_response');
        assert.equal(await userMessages(server, taskId), 2, 'the first message and one follow-up');
      } finally {
        await proxy.close();
      }
    });
  }
});

describe('a provider that gives up cancels its task (the waiter swarm)', () => {
  let server: RunningServer;
  before(async () => {
    server = await startMailServer({ swarm: 'waiter' });
  });
  after(async () => server?.stop());

  for (const [name, run] of CALLS) {
    test(`${name}: every answer lost, the task is cancelled and the error is final`, async () => {
      const known = await taskIds(server);
      const proxy: DroppingProxy = await startDroppingProxy(server.url, { accepted: aNewTask(server, known), drops: null });
      try {
        const mail = createMAIL({ baseUrl: proxy.url, authToken: server.userKey, maxRetries: 2, retryDelayMs: 10 });
        const error = await run(mail('waiter')).then(() => assert.fail('no error'), (e: unknown) => e);
        const cause = APICallError.isInstance(error) ? error : (error as { cause?: unknown }).cause ?? error;
        assert.ok(APICallError.isInstance(cause), String(error));
        assert.equal(cause.isRetryable, false, 'final: the AI SDK does not send it again under a new id');
        assert.equal(cause.statusCode, undefined);
        // the first try and the provider's 2 retries; no retry of the SDK's own
        assert.equal(proxy.attempts.length, 3);
        assert.ok(proxy.attempts.every((a) => a.body === proxy.attempts[0]!.body));
        const created = (await taskIds(server)).filter((id) => !known.includes(id));
        assert.deepEqual(created, [JSON.parse(proxy.attempts[0]!.body).task_id]);
        const task = await getTask(server, created[0]!);
        assert.equal(task?.state, 'cancelled');
        assert.equal(await userMessages(server, created[0]!), 1);
      } finally {
        await proxy.close();
      }
    });
  }
});

describe('a closing event held back while the store fails (the slow swarm, commit bound 1 s)', () => {
  let server: RunningServer;
  before(async () => {
    server = await startMailServer({ swarm: 'slow', env: { MAIL_COMMIT_TIMEOUT: '1' } });
  });
  after(async () => server?.stop());

  test('streamText waits retry_after, asks again with Last-Event-ID and ends with the answer', async () => {
    const lock = await lockSqlite(join(server.dataDir, 'mail.db'));
    let locked = true;
    try {
      const mail = createMAIL({ baseUrl: server.url, authToken: server.userKey });
      const result = streamText({ model: mail('slow'), prompt: 'keep this', includeRawChunks: true });
      const holds: { event: string; id?: number; data: { extra_data: { stored: boolean; retry_after: number } } }[] = [];
      const kinds: string[] = [];
      for await (const part of result.fullStream) {
        kinds.push(part.type);
        if (part.type !== 'raw') continue;
        const event = part.rawValue as (typeof holds)[number];
        if (event.event === 'storage_error' && event.id === undefined) {
          holds.push(event);
          if (locked) {
            locked = false;
            await lock.release(); // the store works again: the provider's next try gets the end
          }
        }
      }
      assert.ok(holds.length >= 1, `no held-back closing event in ${kinds.join(' ')}`);
      assert.equal(holds[0]!.data.extra_data.stored, false);
      assert.equal(holds[0]!.data.extra_data.retry_after, 1);
      assert.equal(await result.text, 'done waiting');
      assert.equal(await result.finishReason, 'stop');
      assert.equal(kinds.filter((k) => k === 'finish').length, 1);
      assert.equal(kinds.filter((k) => k === 'error').length, 0);
      const taskId = taskIdOf(await result.providerMetadata)!;
      const stored = await pollUntil('the task stored', async () => {
        const task = await getTask(server, taskId);
        return task?.stored === true ? task : undefined;
      });
      assert.equal(stored.state, 'completed');
    } finally {
      if (locked) await lock.release();
    }
  });
});
