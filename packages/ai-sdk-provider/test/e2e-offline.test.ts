// End to end: `ai`'s generateText and streamText against a real `mail server` running the
// offline swarm with get_weather_forecast as a breakpoint tool (test/fixtures/swarms.json).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { APICallError, generateText, stepCountIs, streamText, tool, type ModelMessage } from 'ai';
import { z } from 'zod/v4';
import { createMAIL, type MAILProvider } from '../src/index';
import './helpers/quiet';
import { getTask, startMailServer, type RunningServer } from './helpers/server';

let server: RunningServer;
let mail: MAILProvider;

before(async () => {
  server = await startMailServer({ swarm: 'offline-breakpoint' });
  mail = createMAIL({ baseURL: `${server.url}/`, authToken: server.userKey });
});
after(async () => server?.stop());

const taskIdOf = (metadata: unknown) => (metadata as { mail?: { taskId?: string } } | undefined)?.mail?.taskId;

const weatherTool = (calls: unknown[]) =>
  tool({
    description: 'The forecast for a place (the caller looks it up)',
    inputSchema: z.object({ location: z.string(), days_ahead: z.number(), metric: z.boolean() }),
    execute: async (input) => {
      calls.push(input);
      return { location: input.location, date: '2026-11-28', condition: 'rain', temperature: 12, units: 'C' };
    },
  });

describe('the server URL', () => {
  // issue 41: `baseURL`, the AI SDK's spelling, was ignored and the call went to localhost:8000
  test('createMAIL({ baseURL }) reaches that server', async () => {
    const provider = createMAIL({ baseURL: server.url, authToken: server.userKey });
    const result = await generateText({ model: provider('offline-breakpoint'), prompt: 'what is 6*7?' });
    assert.match(result.text, /42/);
    const taskId = taskIdOf(result.providerMetadata);
    assert.ok(taskId, 'providerMetadata.mail.taskId');
    assert.equal((await getTask(server, taskId))?.state, 'completed');
  });

  test('baseUrl, its alias, reaches it too', async () => {
    const provider = createMAIL({ baseUrl: server.url, authToken: server.userKey });
    const result = await generateText({ model: provider('offline-breakpoint'), prompt: 'what is 6*7?' });
    assert.match(result.text, /42/);
  });
});

describe('text answers', () => {
  test('generateText answers "what is 6*7?" with 42', async () => {
    const result = await generateText({ model: mail('offline-breakpoint'), prompt: 'what is 6*7?' });
    assert.match(result.text, /42/);
    assert.equal(result.finishReason, 'stop');
    const taskId = taskIdOf(result.providerMetadata);
    assert.ok(taskId, 'providerMetadata.mail.taskId');
    assert.equal(result.response.id, taskId);
    assert.equal(result.response.modelId, 'offline-breakpoint');
    assert.equal((await getTask(server, taskId))?.state, 'completed');
  });

  test('streamText streams the answer: deltas in order, one finish, task id on the parts', async () => {
    const result = streamText({ model: mail('offline-breakpoint'), prompt: 'What is 12 * (3 + 4)?' });
    const chunks: { type: string; text?: string; providerMetadata?: unknown }[] = [];
    for await (const part of result.fullStream) chunks.push(part as (typeof chunks)[number]);
    const kinds = chunks.map((c) => c.type);
    assert.ok(kinds.indexOf('text-start') < kinds.indexOf('text-delta'));
    assert.ok(kinds.lastIndexOf('text-delta') < kinds.indexOf('text-end'));
    assert.ok(kinds.indexOf('text-end') < kinds.indexOf('finish'));
    assert.equal(kinds.filter((k) => k === 'finish').length, 1);
    const deltas = chunks.filter((c) => c.type === 'text-delta');
    assert.equal(deltas.map((c) => c.text).join(''), await result.text);
    assert.match(await result.text, /84/);
    const taskId = taskIdOf((await result.providerMetadata));
    assert.ok(taskId);
    assert.equal(taskIdOf(deltas[0]!.providerMetadata), taskId);
    assert.equal((await result.response).id, taskId);
    assert.equal(await result.finishReason, 'stop');
  });

  test('usage is undefined for a scripted swarm', async () => {
    const result = await generateText({ model: mail('offline-breakpoint'), prompt: 'what is 1+1?' });
    assert.equal(result.usage.inputTokens, undefined);
    assert.equal(result.usage.outputTokens, undefined);
  });
});

describe('continuity', () => {
  test('a follow-up with the earlier messages continues the same task', async () => {
    const first = await generateText({ model: mail('offline-breakpoint'), prompt: 'what is 6*7?' });
    const messages: ModelMessage[] = [
      { role: 'user', content: 'what is 6*7?' },
      ...first.response.messages,
      { role: 'user', content: 'and what is 2+2?' },
    ];
    const second = streamText({ model: mail('offline-breakpoint'), messages });
    assert.match(await second.text, /4/);
    const firstId = taskIdOf(first.providerMetadata);
    assert.equal(taskIdOf(await second.providerMetadata), firstId);
    const task = await getTask(server, firstId!);
    const userMessages = (task?.events as { event: string; data: string }[]).filter(
      (e) => e.event === 'new_message' && JSON.parse(e.data).extra_data.full_message.message.sender.address_type === 'user',
    );
    assert.equal(userMessages.length, 2, 'both questions went to the same task');
  });
});

describe('breakpoint tools', () => {
  test('generateText: tool call out, tool result in, the task completes', async () => {
    const calls: unknown[] = [];
    const result = await generateText({
      model: mail('offline-breakpoint'),
      prompt: 'What is the weather in Paris tomorrow?',
      tools: { get_weather_forecast: weatherTool(calls) },
      stopWhen: stepCountIs(3),
    });
    assert.deepEqual(calls, [{ location: 'Paris', days_ahead: 1, metric: true }]);
    assert.equal(result.steps.length, 2);
    assert.equal(result.steps[0]!.finishReason, 'tool-calls');
    assert.equal(result.steps[1]!.finishReason, 'stop');
    assert.match(result.text, /Paris/);
    assert.match(result.text, /rain/);
    const ids = result.steps.map((s) => taskIdOf(s.providerMetadata));
    assert.equal(ids[0], ids[1], 'the resume continued the paused task');
    assert.equal((await getTask(server, ids[0]!))?.state, 'completed');
    assert.deepEqual(result.warnings ?? [], []);
  });

  test('streamText: the same round trip streamed', async () => {
    const calls: unknown[] = [];
    const result = streamText({
      model: mail('offline-breakpoint'),
      prompt: 'Weather in Lisbon tomorrow?',
      tools: { get_weather_forecast: weatherTool(calls) },
      stopWhen: stepCountIs(3),
    });
    assert.match(await result.text, /Lisbon/);
    const steps = await result.steps;
    assert.deepEqual(steps.map((s) => s.finishReason), ['tool-calls', 'stop']);
    assert.equal(steps[0]!.toolCalls[0]!.toolName, 'get_weather_forecast');
    assert.equal(calls.length, 1);
  });
});

describe('errors and warnings', () => {
  test('a bad key is a 401 APICallError with the detail', async () => {
    const bad = createMAIL({ baseUrl: server.url, authToken: 'not-a-key' });
    const error = await generateText({ model: bad('offline-breakpoint'), prompt: 'hi', maxRetries: 0 }).catch((e: unknown) => e);
    assert.ok(APICallError.isInstance(error), String(error));
    assert.equal(error.statusCode, 401);
    assert.equal(error.message, 'invalid API key');
    assert.equal(error.isRetryable, false);
  });

  test('the entrypoint is forwarded (an unknown one is the server\'s 400 with its detail)', async () => {
    const error = await generateText({
      model: mail('offline-breakpoint'),
      prompt: 'hi',
      maxRetries: 0,
      providerOptions: { mail: { entrypoint: 'nobody' } },
    }).catch((e: unknown) => e);
    assert.ok(APICallError.isInstance(error), String(error));
    assert.equal(error.statusCode, 400);
    assert.match(error.message, /nobody/);
  });

  test('streamText reports a failed request as an error part', async () => {
    const errors: unknown[] = [];
    const result = streamText({
      model: mail('offline-breakpoint'),
      prompt: 'x',
      maxRetries: 0,
      providerOptions: { mail: { taskId: 'no-such-task' } },
      onError: ({ error }) => void errors.push(error),
    });
    await result.consumeStream();
    assert.equal(errors.length, 1);
    const error = errors[0];
    assert.ok(APICallError.isInstance(error));
    assert.equal(error.statusCode, 404);
    assert.equal(error.message, "task 'no-such-task' not found");
  });

  test('unsupported settings are warnings and the call still answers', async () => {
    const result = await generateText({
      model: mail('offline-breakpoint'),
      system: 'Be brief.',
      prompt: 'what is 6*7?',
      temperature: 0.3,
      maxOutputTokens: 50,
      seed: 7,
    });
    assert.match(result.text, /42/);
    const features = result.warnings!.map((w) => (w.type === 'unsupported' ? w.feature : w.type)).sort();
    assert.deepEqual(features, ['maxOutputTokens', 'seed', 'system messages', 'temperature']);
  });

  test('chatter is shown as reasoning when asked', async () => {
    const result = await generateText({
      model: mail('offline-breakpoint'),
      prompt: 'what is 6*7?',
      providerOptions: { mail: { includeAgentChatter: true } },
    });
    assert.match(result.reasoningText ?? '', /supervisor → math/);
    assert.match(result.text, /42/);
  });
});
