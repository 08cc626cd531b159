// End to end: abortSignal cancels the server task; a stream cut mid-body resumes through
// GET /tasks/{id}/events with Last-Event-ID.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { APICallError, generateText, streamText } from 'ai';
import { createMAIL } from '../src/index';
import { startCuttingProxy, type CuttingProxy } from './helpers/cutting-proxy';
import './helpers/quiet';
import { getTask, pollUntil, startMailServer, type RunningServer } from './helpers/server';

describe('abortSignal and cancellation (the waiter swarm)', () => {
  let server: RunningServer;
  before(async () => {
    server = await startMailServer({ swarm: 'waiter' });
  });
  after(async () => server?.stop());

  test('aborting streamText cancels the running task on the server', async () => {
    const sent: string[] = [];
    let answered!: () => void;
    const streaming = new Promise<void>((ok) => (answered = ok));
    const mail = createMAIL({
      baseUrl: server.url,
      authToken: server.userKey,
      fetch: async (input, init) => {
        // a pass-through that notes the new task's id and when the stream began
        const response = await fetch(input, init);
        if (String(input).endsWith('/message')) {
          sent.push(JSON.parse(String(init?.body)).task_id);
          answered();
        }
        return response;
      },
    });
    const controller = new AbortController();
    const errors: unknown[] = [];
    const result = streamText({
      model: mail('waiter'),
      prompt: 'wait for me',
      abortSignal: controller.signal,
      onError: ({ error }) => void errors.push(error),
    });
    const consumed = result.consumeStream({ onError: (e) => void errors.push(e) });
    await streaming;
    const taskId = sent[0]!;
    assert.equal((await getTask(server, taskId))?.state, 'running');
    controller.abort();
    await consumed;
    const state = await pollUntil('task cancelled', async () => {
      const task = await getTask(server, taskId);
      return task?.state === 'cancelled' ? task.state : undefined;
    });
    assert.equal(state, 'cancelled');
  });
  test('aborting generateText cancels the task too', async () => {
    const sent: string[] = [];
    const mail = createMAIL({
      baseUrl: server.url,
      authToken: server.userKey,
      fetch: async (input, init) => {
        if (String(input).endsWith('/message')) sent.push(JSON.parse(String(init?.body)).task_id);
        return fetch(input, init);
      },
    });
    const controller = new AbortController();
    const call = generateText({ model: mail('waiter'), prompt: 'wait', abortSignal: controller.signal, maxRetries: 0 });
    const rejected = call.then(() => undefined, (e: unknown) => e);
    await pollUntil('task running', async () =>
      sent[0] && (await getTask(server, sent[0]))?.state === 'running' ? true : undefined);
    controller.abort();
    assert.ok(await rejected, 'generateText rejects when aborted');
    await pollUntil('task cancelled', async () => ((await getTask(server, sent[0]!))?.state === 'cancelled' ? true : undefined));
  });

  test('a task cancelled by its owner ends the stream with finish error and the reason', async () => {
    const mail = createMAIL({ baseUrl: server.url, authToken: server.userKey });
    const result = streamText({ model: mail('waiter'), prompt: 'wait' });
    const parts = result.fullStream[Symbol.asyncIterator]();
    for (;;) {
      const { value } = await parts.next();
      if (value?.type === 'start-step') break;
    }
    const taskId = (await pollUntil('the task listed', async () => {
      const response = await fetch(`${server.url}/tasks?limit=1&events=false`, { headers: { Authorization: `Bearer ${server.userKey}` } });
      const page = (await response.json()) as { tasks: { task_id: string; state: string }[] };
      return page.tasks.find((t) => t.state === 'running')?.task_id;
    }));
    const cancel = await fetch(`${server.url}/tasks/${taskId}/cancel`, { method: 'POST', headers: { Authorization: `Bearer ${server.userKey}` } });
    assert.equal(cancel.status, 200);
    for (;;) {
      const { done } = await parts.next();
      if (done) break;
    }
    assert.equal(await result.finishReason, 'error');
    const mailMeta = (await result.providerMetadata)?.mail as { taskId: string; taskStatus: string; error: string };
    assert.equal(mailMeta.taskId, taskId);
    assert.equal(mailMeta.taskStatus, 'cancelled');
    assert.equal(mailMeta.error, 'The task was cancelled by its owner.');
  });
});

describe('a stream cut mid-body', () => {
  let server: RunningServer;
  let proxy: CuttingProxy;
  before(async () => {
    server = await startMailServer({ swarm: 'offline-breakpoint' });
    proxy = await startCuttingProxy(server.url, 1500);
  });
  after(async () => {
    await proxy?.close();
    await server?.stop();
  });

  test('resumes from the last event seen and still ends with the answer', async () => {
    const mail = createMAIL({ baseUrl: proxy.url, authToken: server.userKey });
    const result = streamText({ model: mail('offline-breakpoint'), prompt: 'what is 6*7?', maxRetries: 0 });
    assert.match(await result.text, /42/);
    assert.equal(await result.finishReason, 'stop');
    const resumes = proxy.requests.filter((r) => r.method === 'GET' && r.path.includes('/events'));
    assert.equal(resumes.length, 1, JSON.stringify(proxy.requests));
    const taskId = (await result.response).id;
    assert.equal(resumes[0]!.path, `/tasks/${taskId}/events`);
    assert.ok(Number(resumes[0]!.lastEventId) >= 1, `Last-Event-ID ${resumes[0]!.lastEventId}`);
  });

  test('a resume that fails ends the stream with an error part', async () => {
    const refusing = await startCuttingProxy(server.url, 1500, { refuseResumes: true });
    try {
      const errors: unknown[] = [];
      const mail = createMAIL({ baseUrl: refusing.url, authToken: server.userKey, maxRetries: 2, retryDelayMs: 10 });
      const result = streamText({ model: mail('offline-breakpoint'), prompt: 'what is 6*7?', maxRetries: 0, onError: () => {} });
      for await (const part of result.fullStream) if (part.type === 'error') errors.push(part.error);
      assert.equal(errors.length, 1, `errors: ${errors.map(String).join('; ')}; requests: ${JSON.stringify(refusing.requests)}`);
      assert.ok(APICallError.isInstance(errors[0]), String(errors[0]));
      assert.equal(errors[0].statusCode, 503);
      assert.equal(errors[0].message, 'resume refused');
      assert.equal(errors[0].isRetryable, false);
      // the resume is a request like the others: sent again on a 503, then given up on
      const resumes = refusing.requests.filter((r) => r.method === 'GET' && r.path.includes('/events'));
      assert.equal(resumes.length, 3, JSON.stringify(refusing.requests));
      assert.equal(await result.finishReason, 'error');
      assert.equal(await result.text, '');
    } finally {
      await refusing.close();
    }
  });
});
