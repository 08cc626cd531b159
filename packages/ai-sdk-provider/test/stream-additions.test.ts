// The stream mapping on hand-written SSE in the shapes of the server additions of issue 24
// (S1 status, S2 calls, S3 action data, S7 usage, token_delta) and of the rarer events.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mapEvents, reasoningOf, sse, textOf, types } from './helpers/fixtures';

const ts = '2026-11-27T03:10:35.000000+00:00';
const stored = (id: number, event: string, extra_data: Record<string, unknown> = {}, description = event) => ({
  id,
  event,
  data: { timestamp: ts, description, task_id: 't1', extra_data },
});
const closing = (event: string, data: Record<string, unknown>) => ({
  event,
  data: { timestamp: ts, task_id: 't1', ...data },
});
const delta = (kind: string, text: string, extra: Record<string, unknown> = {}) => ({
  event: 'token_delta',
  data: { timestamp: ts, task_id: 't1', agent: 'supervisor', kind, delta: text, ...extra },
});
const finishOf = (parts: Awaited<ReturnType<typeof mapEvents>>) => {
  const finish = parts.filter((p) => p.type === 'finish');
  assert.equal(finish.length, 1, 'one finish part');
  assert.ok(finish[0]!.type === 'finish');
  return finish[0]!;
};

describe('events without server additions', () => {
  test('ping frames produce no parts', async () => {
    const parts = await mapEvents(sse([
      { event: 'ping', data: { timestamp: ts, task_id: 't1' } },
      closing('task_complete', { response: 'hi' }),
      { event: 'ping', data: { timestamp: ts, task_id: 't1' } },
    ]));
    assert.deepEqual(types(parts), ['stream-start', 'response-metadata', 'text-start', 'text-delta', 'text-end', 'finish']);
  });

  test('a stored task_error is metadata; the closing task_error is the one error finish', async () => {
    const parts = await mapEvents(sse([
      stored(1, 'task_error', {}, 'agent math failed past its retries'),
      closing('task_error', { response: 'agent math failed' }),
    ]));
    const finish = finishOf(parts);
    assert.deepEqual(finish.finishReason, { unified: 'error', raw: 'failed' });
    assert.deepEqual(finish.providerMetadata?.mail, {
      taskId: 't1',
      taskStatus: 'failed',
      error: 'agent math failed',
      storedErrors: ['agent math failed past its retries'],
      currentAgent: null, // no tool call in these events
      agentTrace: [],
    });
    assert.equal(textOf(parts), '');
  });

  test('a cancelled task (closing task_error with status cancelled) finishes with error', async () => {
    const parts = await mapEvents(sse([
      closing('task_error', { response: 'The task was cancelled by its owner.', status: 'cancelled' }),
    ]));
    const finish = finishOf(parts);
    assert.deepEqual(finish.finishReason, { unified: 'error', raw: 'cancelled' });
    assert.equal((finish.providerMetadata?.mail as { error: string }).error, 'The task was cancelled by its owner.');
  });

  test('tool_call reasoning becomes a reasoning block before the answer', async () => {
    const parts = await mapEvents(sse([
      stored(1, 'tool_call', { tool_name: 'task_complete', tool_args: { finish_message: '42' }, tool_call_id: 'c1', reasoning: ['six sevens', 'are 42'] }),
      closing('task_complete', { response: '42' }),
    ]));
    assert.deepEqual(types(parts).slice(2), ['reasoning-start', 'reasoning-delta', 'reasoning-end', 'text-start', 'text-delta', 'text-end', 'finish']);
    assert.equal(reasoningOf(parts), 'six sevens\nare 42');
  });
});

describe('S1: status on the closing event', () => {
  test('waiting_breakpoint without a breakpoint event still pauses with the calls of response', async () => {
    const response = JSON.stringify([{ name: 'ask_user', arguments: '{"q":"city?"}', call_id: 'c9', id: 'fc_c9', type: 'function_call', status: 'completed' }]);
    const parts = await mapEvents(sse([closing('task_complete', { response, status: 'waiting_breakpoint' })]));
    assert.deepEqual(types(parts).slice(2), ['tool-call', 'finish']);
    assert.equal(finishOf(parts).finishReason.unified, 'tool-calls');
  });

  test('completed wins over the heuristic', async () => {
    const parts = await mapEvents(sse([
      stored(1, 'breakpoint_tool_call'),
      closing('task_complete', { response: 'done anyway', status: 'completed' }),
    ]));
    assert.equal(textOf(parts), 'done anyway');
    assert.equal(finishOf(parts).finishReason.unified, 'stop');
  });

  test('failed on a task_complete maps to error', async () => {
    const parts = await mapEvents(sse([closing('task_error', { response: 'timed out', status: 'failed' })]));
    assert.deepEqual(finishOf(parts).finishReason, { unified: 'error', raw: 'failed' });
  });
});

describe('S2: the pending calls in breakpoint_tool_call', () => {
  test('are used in preference to parsing response, arguments objects stringified', async () => {
    const parts = await mapEvents(sse([
      stored(1, 'breakpoint_tool_call', { calls: [{ call_id: 'a', name: 'ask_user', arguments: { q: 'x' } }, { call_id: 'b', name: 'pick', arguments: '{}' }] }),
      closing('task_complete', { response: 'not json', status: 'waiting_breakpoint' }),
    ]));
    const calls = parts.filter((p) => p.type === 'tool-call');
    assert.deepEqual(calls.map((c) => [c.toolCallId, c.toolName, c.input]), [['a', 'ask_user', '{"q":"x"}'], ['b', 'pick', '{}']]);
  });
});

describe('S3: action events with their data', () => {
  test('results of internal calls become dynamic tool results when asked', async () => {
    const events = sse([
      stored(1, 'tool_call', { tool_name: 'calc', tool_call_id: 'c1', tool_args: { e: '6*7' } }),
      stored(2, 'action_call', { tool_name: 'calc', tool_call_id: 'c1', tool_args: { e: '6*7' } }),
      stored(3, 'action_complete', { tool_name: 'calc', tool_call_id: 'c1', tool_args: { e: '6*7' }, content: '42' }),
      stored(4, 'action_error', { tool_name: 'calc', tool_call_id: 'c2', tool_args: {}, error: 'bad input' }),
      closing('task_complete', { response: '42', status: 'completed' }),
    ]);
    const parts = await mapEvents(events, { includeInternalToolCalls: true });
    const results = parts.filter((p) => p.type === 'tool-result');
    assert.deepEqual(results.map((r) => [r.toolCallId, r.result, r.isError]), [['c1', '42', false], ['c2', 'bad input', true]]);
    assert.equal((await mapEvents(events)).filter((p) => p.type === 'tool-result').length, 0);
  });
});

describe('S7: usage on the closing event', () => {
  test('fills the nested V3 usage', async () => {
    const parts = await mapEvents(sse([closing('task_complete', {
      response: 'ok', status: 'completed',
      usage: { input_tokens: 100, output_tokens: 30, reasoning_tokens: 10, cached_input_tokens: 40 },
    })]));
    const { usage } = finishOf(parts);
    assert.deepEqual(usage.inputTokens, { total: 100, noCache: 60, cacheRead: 40, cacheWrite: undefined });
    assert.deepEqual(usage.outputTokens, { total: 30, text: 20, reasoning: 10 });
  });
});

describe('live token_delta events', () => {
  test('answer deltas stream as text; the closing event adds only what was not streamed', async () => {
    const parts = await mapEvents(sse([
      delta('answer', 'The '),
      delta('answer', 'answer'),
      closing('task_complete', { response: 'The answer is 42', status: 'completed' }),
    ]));
    assert.deepEqual(parts.filter((p) => p.type === 'text-delta').map((p) => p.delta), ['The ', 'answer', ' is 42']);
    assert.equal(parts.filter((p) => p.type === 'text-start').length, 1);
    assert.equal(parts.filter((p) => p.type === 'text-end').length, 1);
  });

  test('all of the answer streamed: the closing event adds no delta', async () => {
    const parts = await mapEvents(sse([delta('answer', '42'), closing('task_complete', { response: '42', status: 'completed' })]));
    assert.deepEqual(parts.filter((p) => p.type === 'text-delta').map((p) => p.delta), ['42']);
  });

  test('reasoning deltas are one reasoning block, not repeated by the tool_call reasoning', async () => {
    const parts = await mapEvents(sse([
      delta('reasoning', 'Let me ', { call_id: 'c1' }),
      delta('reasoning', 'think.', { call_id: 'c1' }),
      stored(1, 'tool_call', { tool_name: 'task_complete', tool_call_id: 'c1', tool_args: {}, reasoning: 'Let me think.' }),
      delta('answer', 'Done'),
      closing('task_complete', { response: 'Done.', status: 'completed' }),
    ]));
    assert.deepEqual(types(parts).slice(2), [
      'reasoning-start', 'reasoning-delta', 'reasoning-delta', 'reasoning-end',
      'text-start', 'text-delta', 'text-delta', 'text-end', 'finish',
    ]);
    assert.equal(reasoningOf(parts), 'Let me think.');
    assert.equal(textOf(parts), 'Done.');
  });

  test('other agent text is hidden unless chatter is on', async () => {
    const events = sse([delta('text', 'asking math'), closing('task_complete', { response: 'x', status: 'completed' })]);
    assert.equal(reasoningOf(await mapEvents(events)), '');
    assert.equal(reasoningOf(await mapEvents(events, { includeAgentChatter: true })), 'asking math');
  });
});
