// The provider, the prompt conversion and error mapping, without a server: requests are
// captured by a `fetch` that answers with bytes recorded from a real server.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { APICallError, InvalidArgumentError, NoSuchModelError, type LanguageModelV3Prompt } from '@ai-sdk/provider';
import { createMAIL, mail } from '../src/index';
import { convertToMailMessage, findTaskId } from '../src/convert-to-mail-message';
import { mapMailFinishReason } from '../src/map-finish-reason';
import { fixtureBytes, readAll, sse, textOf } from './helpers/fixtures';

interface Captured { url: string; headers: Headers; body: unknown }

/**
 * `fetch` behind a server root: `GET /` (the provider asks it once per model, for the swarm
 * the server serves) answers `{swarm: {name: swarm}}` (`{}` without `swarm`) and is not
 * passed on; every other request goes to `fetch`.
 */
function servingRoot(fetch: typeof globalThis.fetch, swarm?: string): typeof globalThis.fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    if (new URL(String(input)).pathname === '/' && (init?.method ?? 'GET') === 'GET') {
      const root = swarm === undefined ? {} : { name: 'mail', swarm: { name: swarm } };
      return new Response(JSON.stringify(root), { status: 200, headers: { 'content-type': 'application/json' } });
    }
    return fetch(input, init);
  }) as typeof globalThis.fetch;
}

/** A fetch that records each request and answers `status` with `body` (recorded bytes). */
function recordingFetch(body: Uint8Array | string, status = 200, contentType = 'application/json') {
  const calls: Captured[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    calls.push({
      url: String(input),
      headers: new Headers(init?.headers),
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
    });
    return new Response(body as BodyInit, { status, headers: { 'content-type': contentType } });
  };
  return { calls, fetch: servingRoot(fetch as typeof globalThis.fetch) };
}

const userPrompt = (text: string): LanguageModelV3Prompt => [{ role: 'user', content: [{ type: 'text', text }] }];

describe('createMAIL', () => {
  test('strips the trailing slash of baseUrl, sends the key as Bearer and merges headers', async () => {
    const { calls, fetch } = recordingFetch(fixtureBytes('math.json'));
    const model = createMAIL({ baseUrl: 'http://mail.test:9000/', authToken: 'k1', headers: { 'X-Team': 'a' }, fetch })('offline');
    const result = await model.doGenerate({ prompt: userPrompt('What is 6*7?') });
    assert.equal(calls[0]!.url, 'http://mail.test:9000/message');
    assert.equal(calls[0]!.headers.get('authorization'), 'Bearer k1');
    assert.equal(calls[0]!.headers.get('x-team'), 'a');
    assert.deepEqual(result.content, [{ type: 'text', text: '6*7 = 42', providerMetadata: { mail: { taskId: 'fx-json', taskStatus: 'completed' } } }]);
    assert.deepEqual(result.finishReason, { unified: 'stop', raw: 'completed' });
    assert.equal(result.response?.id, 'fx-json');
  });

  test('baseURL and baseUrl given together must name one server; baseURL alone is used', async () => {
    const { calls, fetch } = recordingFetch(fixtureBytes('math.json'));
    await createMAIL({ baseURL: 'http://a.test:1/', baseUrl: 'http://a.test:1', fetch })('x').doGenerate({ prompt: userPrompt('hi') });
    await createMAIL({ baseURL: 'http://b.test:2', fetch })('x').doGenerate({ prompt: userPrompt('hi') });
    assert.deepEqual(calls.map((c) => c.url), ['http://a.test:1/message', 'http://b.test:2/message']);
    assert.throws(
      () => createMAIL({ baseURL: 'http://a.test:1', baseUrl: 'http://b.test:2' }),
      (e: unknown) => InvalidArgumentError.isInstance(e) && /baseURL \(http:\/\/a\.test:1\) and its alias baseUrl \(http:\/\/b\.test:2\)/.test((e as Error).message),
    );
  });

  test('defaults to http://localhost:8000 and the v3 specification', async () => {
    const { calls, fetch } = recordingFetch(fixtureBytes('math.json'));
    const provider = createMAIL({ fetch });
    assert.equal(provider.specificationVersion, 'v3');
    const model = provider.languageModel('x');
    assert.equal(model.specificationVersion, 'v3');
    assert.equal(model.provider, 'mail');
    await model.doGenerate({ prompt: userPrompt('hi') });
    assert.equal(calls[0]!.url, 'http://localhost:8000/message');
    assert.equal(mail('y').modelId, 'y');
  });

  test('a model id naming a swarm the server does not serve gets a warning (GET / asked once)', async () => {
    const { calls, fetch } = recordingFetch(fixtureBytes('math.json'));
    const urls: string[] = [];
    const served = servingRoot((async (input: RequestInfo | URL, init?: RequestInit) => fetch(input, init)) as typeof globalThis.fetch, 'offline');
    const watching = (async (input: RequestInfo | URL, init?: RequestInit) => {
      urls.push(String(input));
      return served(input, init);
    }) as typeof globalThis.fetch;
    const wrong = createMAIL({ fetch: watching })('no-such-swarm');
    const first = await wrong.doGenerate({ prompt: userPrompt('hi') });
    assert.deepEqual(first.warnings, [
      {
        type: 'other',
        message:
          "model 'no-such-swarm' names a swarm the MAIL server at http://localhost:8000 does not serve: " +
          "it serves 'offline', which answers this call (use mail('offline'), or the server of 'no-such-swarm')",
      },
    ]);
    await wrong.doGenerate({ prompt: userPrompt('again') });
    assert.deepEqual(urls.filter((u) => u.endsWith(':8000/')), ['http://localhost:8000/'], 'GET / once per model');
    const right = await createMAIL({ fetch: watching })('offline').doGenerate({ prompt: userPrompt('hi') });
    assert.deepEqual(right.warnings, []);
    urls.length = 0;
    const unnamed = await createMAIL({ fetch: watching })().doGenerate({ prompt: userPrompt('hi') });
    assert.deepEqual(unnamed.warnings, []);
    assert.deepEqual(urls, ['http://localhost:8000/message'], 'the default id names no swarm: nothing to check');
    assert.equal(calls.length, 4);
  });

  test('embeddingModel and imageModel throw NoSuchModelError', () => {
    assert.throws(() => mail.embeddingModel('e'), NoSuchModelError);
    assert.throws(() => mail.imageModel('i'), NoSuchModelError);
  });

  test('the request body: /message with stream, provider options as fields and kwargs', async () => {
    const { calls, fetch } = recordingFetch(fixtureBytes('math.json'));
    await createMAIL({ fetch })('m').doGenerate({
      prompt: userPrompt('q'),
      providerOptions: { mail: { entrypoint: 'math', subject: 'S', maxSteps: 5, timeout: 30 } },
    });
    const body = calls[0]!.body as Record<string, unknown>;
    assert.equal(body.body, 'q');
    assert.equal(body.entrypoint, 'math');
    assert.equal(body.subject, 'S');
    assert.equal(body.stream, false);
    assert.equal(body.show_events, true); // the JSON answer's events give the agent trace
    assert.equal(body.resume_from, undefined);
    assert.match(String(body.task_id), /^[0-9a-f-]{36}$/);
    assert.deepEqual(body.kwargs, { max_steps: 5, timeout: 30 });
  });

  test('invalid provider options are refused', async () => {
    const { fetch } = recordingFetch(fixtureBytes('math.json'));
    await assert.rejects(
      Promise.resolve(createMAIL({ fetch })('m').doGenerate({ prompt: userPrompt('q'), providerOptions: { mail: { maxSteps: -1 } } })),
      (e: Error) => e.message === 'invalid mail provider options' && /maxSteps/.test(String((e.cause as Error).message)),
    );
  });

  test('a paused JSON answer gives the pending calls as tool calls', async () => {
    const { fetch } = recordingFetch(fixtureBytes('breakpoint.json'));
    const result = await createMAIL({ fetch })('m').doGenerate({ prompt: userPrompt('Weather in Oslo?') });
    assert.deepEqual(result.finishReason, { unified: 'tool-calls', raw: 'waiting_breakpoint' });
    assert.equal(result.content.length, 1);
    const call = result.content[0]!;
    assert.ok(call.type === 'tool-call');
    assert.equal(call.toolName, 'get_weather_forecast');
    assert.equal(JSON.parse(call.input).location, 'Oslo');
  });

  test('a recorded error answer becomes an APICallError with the detail', async () => {
    const raw = new TextDecoder().decode(fixtureBytes('error-401.http'));
    const { fetch } = recordingFetch(raw.slice(raw.indexOf('\r\n\r\n') + 4), 401);
    const error = await createMAIL({ fetch })('m').doStream({ prompt: userPrompt('x') }).then(
      () => assert.fail('no error'),
      (e: unknown) => e,
    );
    assert.ok(APICallError.isInstance(error));
    assert.equal(error.statusCode, 401);
    assert.equal(error.message, 'invalid API key');
    assert.equal(error.isRetryable, false);
  });

  test('502, 503 and 504 are sent again with the same body, then given up on as final errors; 400 is not', async () => {
    for (const [status, retried] of [[502, true], [503, true], [504, true], [400, false]] as const) {
      const { calls, fetch } = recordingFetch(JSON.stringify({ detail: 'store down' }), status);
      const model = createMAIL({ fetch, maxRetries: 2, retryDelayMs: 0 })('m');
      const error = await Promise.resolve(model.doGenerate({ prompt: userPrompt('x') })).catch((e: unknown) => e);
      assert.ok(APICallError.isInstance(error));
      assert.equal(error.statusCode, status);
      assert.equal(error.message, 'store down');
      // final: the AI SDK must not call doGenerate again, which would draw a new task id
      assert.equal(error.isRetryable, false, `status ${status}`);
      const posts = calls.filter((c) => c.url.endsWith('/message'));
      assert.equal(posts.length, retried ? 3 : 1, `status ${status}`);
      assert.ok(posts.every((c) => JSON.stringify(c.body) === JSON.stringify(posts[0]!.body)));
      const taskId = (posts[0]!.body as { task_id: string }).task_id;
      // a request the server may have taken is cancelled when the provider gives up
      const cancels = calls.filter((c) => c.url.endsWith('/cancel')).map((c) => c.url);
      assert.deepEqual(cancels, retried ? [`http://localhost:8000/tasks/${taskId}/cancel`] : []);
    }
  });

  test('a Retry-After is waited for; a follow-up sends one Idempotency-Key with every attempt', async () => {
    const calls: Captured[] = [];
    const answers = [
      new Response(JSON.stringify({ detail: 'held back', task_id: 't9' }), {
        status: 503,
        headers: { 'content-type': 'application/json', 'retry-after': '0.2' },
      }),
      new Response(fixtureBytes('math.json') as BodyInit, { status: 200, headers: { 'content-type': 'application/json' } }),
    ];
    const fetch = servingRoot((async (input: RequestInfo | URL, init?: RequestInit) => {
      calls.push({ url: String(input), headers: new Headers(init?.headers), body: JSON.parse(String(init?.body)) });
      return answers.shift()!;
    }) as typeof globalThis.fetch);
    const model = createMAIL({ fetch, retryDelayMs: 0 })('m');
    const started = Date.now();
    const result = await model.doGenerate({ prompt: userPrompt('more'), providerOptions: { mail: { taskId: 't9' } } });
    assert.ok(Date.now() - started >= 190, 'waited for Retry-After');
    assert.deepEqual(result.finishReason, { unified: 'stop', raw: 'completed' });
    assert.equal(calls.length, 2);
    const keys = calls.map((c) => c.headers.get('idempotency-key'));
    assert.ok(keys[0]);
    assert.equal(keys[1], keys[0]);
    assert.deepEqual(calls[1]!.body, calls[0]!.body);
    assert.equal((calls[0]!.body as { resume_from: string }).resume_from, 'user_response');
    // a new call is a new follow-up: a new key
    answers.push(new Response(fixtureBytes('math.json') as BodyInit, { status: 200, headers: { 'content-type': 'application/json' } }));
    await model.doGenerate({ prompt: userPrompt('more'), providerOptions: { mail: { taskId: 't9' } } });
    assert.notEqual(calls[2]!.headers.get('idempotency-key'), keys[0]);
    assert.equal(calls[2]!.headers.get('idempotency-key')?.length, 36);
  });

  test('a new task sends no Idempotency-Key (its task_id is the key); bad retry settings are refused', async () => {
    const { calls, fetch } = recordingFetch(fixtureBytes('math.json'));
    await createMAIL({ fetch })('m').doGenerate({ prompt: userPrompt('q') });
    assert.equal(calls[0]!.headers.get('idempotency-key'), null);
    assert.match((calls[0]!.body as { task_id: string }).task_id, /^[0-9a-f-]{36}$/);
    assert.throws(() => createMAIL({ maxRetries: -1 }), /maxRetries must be an integer >= 0/);
    assert.throws(() => createMAIL({ retryDelayMs: 1.5 }), /retryDelayMs must be an integer >= 0/);
  });

  test('unsupported settings each give one warning and do not fail the call', async () => {
    const { fetch } = recordingFetch(fixtureBytes('math.json'));
    const result = await createMAIL({ fetch })('m').doGenerate({
      prompt: [{ role: 'system', content: 'be brief' }, ...userPrompt('q')],
      temperature: 0.2, topP: 0.9, maxOutputTokens: 5, stopSequences: ['x'], seed: 1,
      responseFormat: { type: 'json' }, toolChoice: { type: 'required' },
    });
    assert.deepEqual(result.warnings.map((w) => (w.type === 'unsupported' ? w.feature : w.type)).sort(), [
      'maxOutputTokens', 'responseFormat', 'seed', 'stopSequences', 'system messages', 'temperature', 'toolChoice', 'topP',
    ]);
  });
});

describe('convertToMailMessage', () => {
  const assistant = (taskId: string) => ({
    role: 'assistant' as const,
    content: [{ type: 'text' as const, text: 'earlier answer', providerOptions: { mail: { taskId } } }],
  });

  test('a first message starts a new task with the last user text', () => {
    const input = convertToMailMessage([
      { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
    ]);
    assert.deepEqual(input, { body: 'a\nb', warnings: [] });
  });

  test('a follow-up continues the task of the last assistant message', () => {
    const prompt: LanguageModelV3Prompt = [...userPrompt('one'), assistant('old'), ...userPrompt('two'), assistant('T1'), ...userPrompt('three')];
    assert.equal(findTaskId(prompt), 'T1');
    assert.deepEqual(convertToMailMessage(prompt), { body: 'three', taskId: 'T1', resumeFrom: 'user_response', warnings: [] });
  });

  test('tool results resume the breakpoint with call ids and text contents', () => {
    const prompt: LanguageModelV3Prompt = [
      ...userPrompt('weather?'),
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'w', input: {}, providerOptions: { mail: { taskId: 'T2' } } }] },
      { role: 'tool', content: [
        { type: 'tool-result', toolCallId: 'c1', toolName: 'w', output: { type: 'json', value: { sky: 'clear' } } },
        { type: 'tool-result', toolCallId: 'c2', toolName: 'w', output: { type: 'text', value: 'rain' } },
      ] },
    ];
    assert.deepEqual(convertToMailMessage(prompt), {
      body: '',
      taskId: 'T2',
      resumeFrom: 'breakpoint_tool_call',
      toolResults: [{ call_id: 'c1', content: '{"sky":"clear"}' }, { call_id: 'c2', content: 'rain' }],
      warnings: [],
    });
  });

  test('tool results without a known task are refused with an explanation', () => {
    assert.throws(
      () => convertToMailMessage([{ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c', toolName: 'w', output: { type: 'text', value: 'x' } }] }]),
      /providerMetadata\.mail\.taskId/,
    );
  });

  test('system messages and files are reported', () => {
    const input = convertToMailMessage([
      { role: 'system', content: 's' },
      { role: 'user', content: [{ type: 'text', text: 'q' }, { type: 'file', data: 'aGk=', mediaType: 'text/plain' }] },
    ]);
    assert.deepEqual(input.warnings.map((w) => (w.type === 'unsupported' ? w.feature : '')), ['system messages', 'file parts']);
  });
});

test('finish reasons by task status', () => {
  assert.equal(mapMailFinishReason('completed').unified, 'stop');
  assert.equal(mapMailFinishReason('waiting_breakpoint').unified, 'tool-calls');
  assert.equal(mapMailFinishReason('failed').unified, 'error');
  assert.equal(mapMailFinishReason('cancelled').unified, 'error');
  assert.deepEqual(mapMailFinishReason('interrupted'), { unified: 'other', raw: 'interrupted' });
});

describe('a closing event held back (storage_error without an id)', () => {
  const hold = { event: 'storage_error', data: { task_id: 't', description: 'not stored yet', extra_data: { stored: false, retry_after: 0 } } };
  const opening = sse([
    { event: 'new_message', id: 1, data: { task_id: 't', extra_data: {} } },
    { event: 'storage_error', id: 2, data: { task_id: 't', description: 'store down', extra_data: {} } },
    hold,
  ]);
  const closing = sse([{ event: 'task_complete', data: { task_id: 't', response: 'kept', status: 'completed' } }]);

  /** A fetch that answers POST /message with `first`, each GET of the events with the next of `then`. */
  function scriptedFetch(first: Uint8Array, then: Uint8Array[]) {
    const calls: Captured[] = [];
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      calls.push({ url: String(input), headers: new Headers(init?.headers), body: undefined });
      const url = String(input);
      if (url.endsWith('/cancel')) return new Response('{"detail": "finished"}', { status: 409, headers: { 'content-type': 'application/json' } });
      const bytes = url.endsWith('/message') ? first : then.shift() ?? then.at(-1) ?? first;
      return new Response(bytes as BodyInit, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    }) as typeof globalThis.fetch;
    return { calls, fetch: servingRoot(fetch) };
  }

  test('the provider asks again after the last stored event and ends with the answer', async () => {
    const { calls, fetch } = scriptedFetch(opening, [closing]);
    const { stream } = await createMAIL({ fetch })('m').doStream({ prompt: userPrompt('q') });
    const parts = await readAll(stream);
    assert.equal(textOf(parts), 'kept');
    const finishes = parts.filter((p) => p.type === 'finish');
    assert.equal(finishes.length, 1);
    assert.deepEqual(finishes[0]!.type === 'finish' && finishes[0]!.finishReason, { unified: 'stop', raw: 'completed' });
    // the live storage_error (with an id) is kept in the metadata; the hold is not an error
    const meta = finishes[0]!.providerMetadata?.mail as { storedErrors?: string[] };
    assert.deepEqual(meta.storedErrors, ['store down']);
    const resumes = calls.filter((c) => c.url.includes('/events'));
    assert.equal(resumes.length, 1);
    assert.equal(resumes[0]!.headers.get('last-event-id'), '2');
  });

  test('holds are asked about maxReconnects times, then the stream ends with an error and cancels', async () => {
    const { calls, fetch } = scriptedFetch(opening, [sse([hold])]);
    const { stream } = await createMAIL({ fetch, maxReconnects: 2 })('m').doStream({ prompt: userPrompt('q') });
    const parts = await readAll(stream);
    const errors = parts.filter((p) => p.type === 'error');
    assert.equal(errors.length, 1);
    assert.match(String(errors[0]!.type === 'error' && errors[0]!.error), /still holds its answer back .* after 2 tries/);
    assert.equal(calls.filter((c) => c.url.includes('/events')).length, 2);
    assert.equal(calls.filter((c) => c.url.endsWith('/cancel')).length, 1);
  });
});
