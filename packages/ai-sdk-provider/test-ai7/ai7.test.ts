// The provider (its built dist/, installed as `@mail/ai-sdk-provider` from `file:..`) with
// `ai` 7's own generateText and streamText, on Node 22 (the `node` npm package), against a
// real `mail server` running the offline swarm with get_weather_forecast as a breakpoint
// tool. `ai` 7 takes the provider's LanguageModelV3 through its V3-to-V4 adapter. Retries
// run against the slow and waiter swarms through a proxy that drops the connection of a
// request the server took (../test/helpers/dropping-proxy.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { createMAIL, type MAILProvider } from '@mail/ai-sdk-provider';
import { APICallError, generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { startDroppingProxy } from '../test/helpers/dropping-proxy';
import '../test/helpers/quiet';
import { getTask, PACKAGE_DIR, startMailServer, type RunningServer } from '../test/helpers/server';

let server: RunningServer;
let mail: MAILProvider;

before(async () => {
  server = await startMailServer({ swarm: 'offline-breakpoint' });
  mail = createMAIL({ baseUrl: server.url, authToken: server.userKey });
});
after(async () => server?.stop());

const taskIdOf = (metadata: unknown) => (metadata as { mail?: { taskId?: string } } | undefined)?.mail?.taskId;

test('the run is Node 22, ai 7 and the built provider', () => {
  assert.match(process.version, /^v22\./);
  const require = createRequire(import.meta.url);
  const ai = JSON.parse(readFileSync(require.resolve('ai/package.json'), 'utf8')) as { version: string };
  assert.match(ai.version, /^7\./);
  // the package, not the source: its entry is dist/index.js of packages/ai-sdk-provider
  assert.equal(
    import.meta.resolve('@mail/ai-sdk-provider'),
    new URL(`file://${PACKAGE_DIR}/dist/index.js`).href,
  );
});

test('generateText answers "what is 6*7?" with 42', async () => {
  const result = await generateText({ model: mail('offline-breakpoint'), prompt: 'what is 6*7?' });
  assert.match(result.text, /42/);
  assert.equal(result.finishReason, 'stop');
  const taskId = taskIdOf(result.providerMetadata);
  assert.ok(taskId, 'providerMetadata.mail.taskId');
  assert.equal(result.response.id, taskId);
  assert.equal((await getTask(server, taskId))?.state, 'completed');
});

test('streamText streams text deltas and one finish with the task id', async () => {
  const result = streamText({ model: mail('offline-breakpoint'), prompt: 'What is 12 * (3 + 4)?' });
  const parts: { type: string; text?: string; providerMetadata?: unknown }[] = [];
  for await (const part of result.fullStream) parts.push(part as (typeof parts)[number]);
  const kinds = parts.map((p) => p.type);
  const deltas = parts.filter((p) => p.type === 'text-delta');
  assert.ok(deltas.length > 0, `no text-delta in ${kinds.join(' ')}`);
  assert.ok(kinds.lastIndexOf('text-delta') < kinds.indexOf('finish'));
  assert.equal(kinds.filter((k) => k === 'finish').length, 1);
  const text = await result.text;
  assert.equal(deltas.map((p) => p.text).join(''), text);
  assert.match(text, /84/);
  const taskId = taskIdOf(await result.providerMetadata);
  assert.ok(taskId, 'providerMetadata.mail.taskId');
  assert.equal(taskIdOf(deltas[0]!.providerMetadata), taskId);
  assert.equal(await result.finishReason, 'stop');
});

test('a breakpoint round trip: tool call out, tool result in, the task completes', async () => {
  const calls: unknown[] = [];
  const result = await generateText({
    model: mail('offline-breakpoint'),
    prompt: 'What is the weather in Paris tomorrow?',
    tools: {
      get_weather_forecast: tool({
        description: 'The forecast for a place (the caller looks it up)',
        inputSchema: z.object({ location: z.string(), days_ahead: z.number(), metric: z.boolean() }),
        execute: async (input) => {
          calls.push(input);
          return { location: input.location, date: '2026-11-28', condition: 'rain', temperature: 12, units: 'C' };
        },
      }),
    },
    stopWhen: stepCountIs(3),
  });
  assert.deepEqual(calls, [{ location: 'Paris', days_ahead: 1, metric: true }]);
  assert.deepEqual(result.steps.map((s) => s.finishReason), ['tool-calls', 'stop']);
  assert.match(result.text, /Paris/);
  assert.match(result.text, /rain/);
  const ids = result.steps.map((s) => taskIdOf(s.providerMetadata));
  assert.ok(ids[0]);
  assert.equal(ids[1], ids[0], 'the resume continued the paused task');
  assert.equal((await getTask(server, ids[0]))?.state, 'completed');
});

test('a bad key is a 401 APICallError with the server\'s detail', async () => {
  const bad = createMAIL({ baseUrl: server.url, authToken: 'not-a-key' });
  const error = await generateText({ model: bad('offline-breakpoint'), prompt: 'hi', maxRetries: 0 }).catch((e: unknown) => e);
  assert.ok(APICallError.isInstance(error), String(error));
  assert.equal(error.statusCode, 401);
  assert.equal(error.message, 'invalid API key');
  assert.equal(error.isRetryable, false);
});

// Retries under ai 7: its V3 adapter builds new call options for every doGenerate/doStream,
// so the provider keeps the task id by retrying inside one call (src/mail-retry.ts).

async function taskIds(target: RunningServer): Promise<string[]> {
  const response = await fetch(`${target.url}/tasks?events=false`, { headers: { Authorization: `Bearer ${target.userKey}` } });
  assert.equal(response.status, 200);
  return Object.keys((await response.json()) as Record<string, unknown>);
}

async function userMessages(target: RunningServer, taskId: string): Promise<number> {
  const task = (await getTask(target, taskId)) as { events: { event: string; data: unknown }[] };
  return task.events.filter((e) => {
    const data = (typeof e.data === 'string' ? JSON.parse(e.data) : e.data) as {
      extra_data?: { full_message?: { message?: { sender?: { address_type?: string } } } };
    };
    return e.event === 'new_message' && data.extra_data?.full_message?.message?.sender?.address_type === 'user';
  }).length;
}

describe('an answer lost after the server took the request (ai 7, the slow swarm)', () => {
  let slow: RunningServer;
  before(async () => {
    slow = await startMailServer({ swarm: 'slow' });
  });
  after(async () => slow?.stop());

  const calls: [string, (model: MAILProvider, id: string) => Promise<{ text: string; taskId?: string }>][] = [
    ['generateText', async (provider, id) => {
      const result = await generateText({ model: provider(id), prompt: 'take your time' });
      return { text: result.text, taskId: taskIdOf(result.providerMetadata) };
    }],
    ['streamText', async (provider, id) => {
      const result = streamText({ model: provider(id), prompt: 'take your time' });
      return { text: await result.text, taskId: taskIdOf(await result.providerMetadata) };
    }],
  ];
  for (const [name, run] of calls) {
    test(`${name} gets the first task's answer; one task, run once`, async () => {
      const known = await taskIds(slow);
      const accepted = async () => (await taskIds(slow)).some((id) => !known.includes(id));
      const proxy = await startDroppingProxy(slow.url, { accepted });
      try {
        const provider = createMAIL({ baseUrl: proxy.url, authToken: slow.userKey, retryDelayMs: 50 });
        const { text, taskId } = await run(provider, 'slow');
        assert.equal(text, 'done waiting');
        assert.equal(proxy.dropped(), 1);
        assert.equal(proxy.attempts.length, 2);
        assert.equal(proxy.attempts[1]!.body, proxy.attempts[0]!.body);
        const created = (await taskIds(slow)).filter((id) => !known.includes(id));
        assert.deepEqual(created, [taskId]);
        assert.equal(await userMessages(slow, created[0]!), 1);
      } finally {
        await proxy.close();
      }
    });
  }
});

describe('a provider that gives up (ai 7, the waiter swarm)', () => {
  let waiter: RunningServer;
  before(async () => {
    waiter = await startMailServer({ swarm: 'waiter' });
  });
  after(async () => waiter?.stop());

  test('giving up cancels the task, and ai 7 does not send it again', async () => {
    const known = await taskIds(waiter);
    const accepted = async () => (await taskIds(waiter)).some((id) => !known.includes(id));
    const proxy = await startDroppingProxy(waiter.url, { accepted, drops: null });
    try {
      const provider = createMAIL({ baseUrl: proxy.url, authToken: waiter.userKey, maxRetries: 1, retryDelayMs: 10 });
      const error = await generateText({ model: provider('waiter'), prompt: 'never mind' }).catch((e: unknown) => e);
      assert.ok(APICallError.isInstance(error), String(error));
      assert.equal(error.isRetryable, false);
      assert.equal(proxy.attempts.length, 2); // the provider's own retry, none of ai 7's
      const created = (await taskIds(waiter)).filter((id) => !known.includes(id));
      assert.equal(created.length, 1);
      assert.equal((await getTask(waiter, created[0]!))?.state, 'cancelled');
    } finally {
      await proxy.close();
    }
  });
});
