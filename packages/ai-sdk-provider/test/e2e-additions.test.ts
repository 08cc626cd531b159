// End to end with the server additions of issue 24 (S1-S7 and live token_delta events):
// skipped until SERVER_HAS_AI_ADDITIONS is true (test/helpers/flags.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateText, jsonSchema, streamText, tool } from 'ai';
import { createMAIL, type MAILProvider } from '../src/index';
import { needsAiAdditions } from './helpers/flags';
import { startLlmStub } from './helpers/llm-stub';
import './helpers/quiet';
import { FIXTURES_DIR, startMailServer, type RunningServer } from './helpers/server';
import { join } from 'node:path';

type Raw = { event: string; id?: number; data: Record<string, unknown> };

async function rawEvents(mail: MAILProvider, prompt: string): Promise<Raw[]> {
  const result = streamText({ model: mail('offline-breakpoint'), prompt, includeRawChunks: true });
  const raws: Raw[] = [];
  for await (const part of result.fullStream) if (part.type === 'raw') raws.push(part.rawValue as Raw);
  return raws;
}

describe('server additions on the offline swarm', needsAiAdditions, () => {
  let server: RunningServer;
  let mail: MAILProvider;
  before(async () => {
    server = await startMailServer({ swarm: 'offline-breakpoint' });
    mail = createMAIL({ baseUrl: server.url, authToken: server.userKey });
  });
  after(async () => server?.stop());

  test('S1: the closing event says completed or waiting_breakpoint', async () => {
    const done = (await rawEvents(mail, 'what is 6*7?')).at(-1)!;
    assert.equal(done.data.status, 'completed');
    const paused = (await rawEvents(mail, 'weather in Paris?')).at(-1)!;
    assert.equal(paused.data.status, 'waiting_breakpoint');
  });

  test('S2: breakpoint_tool_call lists the pending calls', async () => {
    const events = await rawEvents(mail, 'weather in Rome?');
    const bp = events.find((e) => e.event === 'breakpoint_tool_call')!;
    const calls = (bp.data.extra_data as { calls: { name: string; call_id: string }[] }).calls;
    assert.equal(calls[0]!.name, 'get_weather_forecast');
  });

  test('S3: action events carry the tool name, call id and result', async () => {
    const events = await rawEvents(mail, 'what is 6*7?');
    const complete = events.find((e) => e.event === 'action_complete')!;
    const extra = complete.data.extra_data as Record<string, unknown>;
    assert.equal(extra.tool_name, 'calculate_expression');
    assert.ok(extra.tool_call_id);
    assert.match(String(extra.content), /42/);
  });

  test('S4: tools that are not breakpoint tools are warned about', async () => {
    const result = await generateText({
      model: mail('offline-breakpoint'),
      prompt: 'what is 6*7?',
      tools: {
        get_weather_forecast: tool({ inputSchema: jsonSchema({ type: 'object' }) }),
        not_a_breakpoint: tool({ inputSchema: jsonSchema({ type: 'object' }) }),
      },
    });
    const features = (result.warnings ?? []).map((w) => (w.type === 'unsupported' ? w.feature : ''));
    assert.deepEqual(features, ["tool 'not_a_breakpoint'"]);
  });
});

describe('live tokens from an LLM swarm', needsAiAdditions, () => {
  let server: RunningServer;
  let stub: { url: string; stop: () => Promise<void> };
  before(async () => {
    stub = await startLlmStub();
    server = await startMailServer({
      swarm: 'streaming-example', // the example swarm with stream_tokens on (fixtures)
      swarmSource: join(FIXTURES_DIR, 'swarms.json'),
      env: { LITELLM_PROXY_API_BASE: `${stub.url}/v1` },
    });
  });
  after(async () => {
    await server?.stop();
    await stub?.stop();
  });

  test('the answer streams as several text deltas, and usage is reported (S7)', async () => {
    const mail = createMAIL({ baseUrl: server.url, authToken: server.userKey });
    const result = streamText({ model: mail('streaming-example'), prompt: 'What is 12 * (3 + 4)?' });
    const deltas: string[] = [];
    for await (const part of result.fullStream) if (part.type === 'text-delta') deltas.push(part.text);
    assert.ok(deltas.length > 1, `${deltas.length} text deltas`);
    assert.equal(deltas.join(''), await result.text);
    assert.match(await result.text, /84/);
    const usage = await result.usage;
    assert.ok((usage.inputTokens ?? 0) > 0, 'input tokens');
  });
});
