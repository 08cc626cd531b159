// The stream mapping on SSE recorded from a real `mail server` (offline-breakpoint swarm).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fixtureBytes, mapEvents, parseEvents, reasoningOf, textOf, types } from './helpers/fixtures';

describe('SSE parsing of recorded streams', () => {
  test('stored events carry their sequence number, the closing event none', async () => {
    const events = await parseEvents(fixtureBytes('math.sse'));
    const stored = events.filter((e) => e.id !== undefined);
    assert.deepEqual(stored.map((e) => e.id), stored.map((_, i) => i + 1));
    const last = events[events.length - 1]!;
    assert.equal(last.event, 'task_complete');
    assert.equal(last.id, undefined);
    assert.deepEqual(Object.keys(last.data as object).sort(), ['response', 'task_id', 'timestamp']);
    assert.ok(events.some((e) => e.event === 'action_complete'));
  });

  test('chunk boundaries anywhere give the same events', async () => {
    const whole = await parseEvents(fixtureBytes('math.sse'));
    for (const size of [1, 7, 64, 1000]) {
      assert.deepEqual(await parseEvents(fixtureBytes('math.sse'), size), whole, `chunks of ${size}`);
    }
  });
});

describe('a completed turn', () => {
  test('the answer is one text block, then one stop finish', async () => {
    const parts = await mapEvents(fixtureBytes('math.sse'), { taskId: 'fx-math' });
    assert.deepEqual(types(parts), ['stream-start', 'response-metadata', 'text-start', 'text-delta', 'text-end', 'finish']);
    assert.equal(textOf(parts), '6*7 = 42');
    const finish = parts.at(-1)!;
    assert.ok(finish.type === 'finish');
    assert.deepEqual(finish.finishReason, { unified: 'stop', raw: 'completed' });
    assert.deepEqual(finish.providerMetadata, {
      mail: {
        taskId: 'fx-math',
        taskStatus: 'completed',
        // who worked on the turn: the supervisor asked math, math answered, the supervisor completed
        currentAgent: 'supervisor',
        agentTrace: [
          { agent: 'supervisor', tools: ['send_request'] },
          { agent: 'math', tools: ['calculate_expression', 'send_response'] },
          { agent: 'supervisor', tools: ['task_complete'] },
        ],
      },
    });
    assert.equal(finish.usage.inputTokens.total, undefined);
    assert.equal(finish.usage.outputTokens.total, undefined);
    const delta = parts.find((p) => p.type === 'text-delta')!;
    assert.equal((delta.providerMetadata?.mail as { taskId: string }).taskId, 'fx-math');
  });

  test('a follow-up turn of the same task maps the same way', async () => {
    const parts = await mapEvents(fixtureBytes('math-followup.sse'));
    assert.equal(textOf(parts), '2+2 = 4');
    assert.equal(parts.filter((p) => p.type === 'finish').length, 1);
  });

  test('a turn that ran out of steps still completes with the apology', async () => {
    const parts = await mapEvents(fixtureBytes('max-steps.sse'));
    assert.match(textOf(parts), /ran out of steps/);
  });

  test('agent chatter is hidden by default and shown as reasoning when asked', async () => {
    const hidden = await mapEvents(fixtureBytes('math.sse'));
    assert.equal(hidden.filter((p) => p.type.startsWith('reasoning')).length, 0);
    const shown = await mapEvents(fixtureBytes('math.sse'), { includeAgentChatter: true });
    const reasoning = reasoningOf(shown);
    assert.match(reasoning, /supervisor → math: Calculation\nPlease evaluate this expression: 6\*7/);
    assert.match(reasoning, /math → supervisor/);
    assert.doesNotMatch(reasoning, /What is 6\*7\?/, 'the user message is not echoed');
    assert.equal(textOf(shown), '6*7 = 42');
  });

  test('internal tool calls are hidden by default and provider-executed dynamic calls when asked', async () => {
    const hidden = await mapEvents(fixtureBytes('math.sse'));
    assert.equal(hidden.filter((p) => p.type === 'tool-call').length, 0);
    const shown = await mapEvents(fixtureBytes('math.sse'), { includeInternalToolCalls: true });
    const calls = shown.filter((p) => p.type === 'tool-call');
    assert.deepEqual(calls.map((c) => c.toolName), ['send_request', 'calculate_expression', 'send_response', 'task_complete']);
    for (const call of calls) {
      assert.equal(call.providerExecuted, true);
      assert.equal(call.dynamic, true);
    }
    assert.deepEqual(JSON.parse(calls[1]!.input), { expression: '6*7' });
  });

  test('with includeRawChunks every frame is also a raw part', async () => {
    const parts = await mapEvents(fixtureBytes('math.sse'), { includeRawChunks: true });
    const events = await parseEvents(fixtureBytes('math.sse'));
    assert.equal(parts.filter((p) => p.type === 'raw').length, events.length);
  });
});

describe('a breakpoint pause', () => {
  test('the pending call becomes a tool call and the finish is tool-calls', async () => {
    const parts = await mapEvents(fixtureBytes('breakpoint.sse'), { taskId: 'fx-bp' });
    assert.deepEqual(types(parts), ['stream-start', 'response-metadata', 'tool-call', 'finish']);
    const call = parts[2]!;
    assert.ok(call.type === 'tool-call');
    assert.equal(call.toolCallId, 'call_6');
    assert.equal(call.toolName, 'get_weather_forecast');
    assert.deepEqual(JSON.parse(call.input), { location: 'Paris', days_ahead: 1, metric: true });
    assert.equal(call.providerExecuted, undefined);
    assert.deepEqual(call.providerMetadata, { mail: { taskId: 'fx-bp', taskStatus: 'waiting_breakpoint' } });
    const finish = parts[3]!;
    assert.ok(finish.type === 'finish');
    assert.deepEqual(finish.finishReason, { unified: 'tool-calls', raw: 'waiting_breakpoint' });
    assert.equal((finish.providerMetadata?.mail as { taskStatus: string }).taskStatus, 'waiting_breakpoint');
  });

  test("the caller's own tools are not repeated as internal calls", async () => {
    const parts = await mapEvents(fixtureBytes('breakpoint.sse'), {
      includeInternalToolCalls: true,
      toolNames: new Set(['get_weather_forecast']),
    });
    const calls = parts.filter((p) => p.type === 'tool-call');
    assert.deepEqual(calls.map((c) => [c.toolName, c.providerExecuted ?? false]), [
      ['send_request', true],
      ['get_weather_forecast', false],
    ]);
  });

  test('the resumed turn answers with text', async () => {
    const parts = await mapEvents(fixtureBytes('breakpoint-resume.sse'));
    assert.match(textOf(parts), /^Forecast for Paris/);
    const finish = parts.at(-1)!;
    assert.ok(finish.type === 'finish' && finish.finishReason.unified === 'stop');
  });

  test('a replay through GET /tasks/{id}/events (from Last-Event-ID 3) pauses the same way', async () => {
    const parts = await mapEvents(fixtureBytes('cancel-events.sse'));
    const calls = parts.filter((p) => p.type === 'tool-call');
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.toolName, 'get_weather_forecast');
  });
});

describe('a stream cut before its closing event', () => {
  test('ends with an error part and one error finish', async () => {
    const bytes = fixtureBytes('math.sse');
    const cut = bytes.slice(0, Math.floor(bytes.length / 2));
    const parts = await mapEvents(cut);
    assert.deepEqual(types(parts).slice(-2), ['error', 'finish']);
    const finish = parts.at(-1)!;
    assert.ok(finish.type === 'finish' && finish.finishReason.unified === 'error');
  });
});
