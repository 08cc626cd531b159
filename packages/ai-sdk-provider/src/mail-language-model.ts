import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  SharedV3Warning,
} from '@ai-sdk/provider';
import {
  combineHeaders,
  createJsonResponseHandler,
  delay,
  getFromApi,
  parseProviderOptions,
  postJsonToApi,
  type FetchFunction,
  type ResponseHandler,
} from '@ai-sdk/provider-utils';
import { traceOfEvents } from './agent-trace';
import { mailMessageResponseSchema, mailServerInfoSchema, type MailServerInfo } from './mail-api-types';
import { collectStream } from './collect-stream';
import { convertToMailMessage } from './convert-to-mail-message';
import { mailFailedResponseHandler } from './mail-error';
import { mailProviderOptionsSchema } from './mail-options';
import { DEFAULT_RETRY_SETTINGS, finalError, mayHaveArrived, withRetries, type MailRetrySettings } from './mail-retry';
import { parseMailEventStream, type MailSseEvent } from './mail-sse';
import { mailUsage, parsePendingCalls, storageHold } from './mail-event-data';
import { MailStreamMapper } from './mail-stream-transformer';
import { mapMailFinishReason } from './map-finish-reason';

export interface MailModelConfig {
  provider: string;
  baseUrl: string;
  headers: () => Record<string, string | undefined>;
  fetch?: FetchFunction;
  /** How requests are retried (see `mail-retry.ts`); the defaults when absent. */
  retries?: MailRetrySettings;
}

/** The model id `createMAIL()(...)` gives when none is named: it names no swarm. */
export const DEFAULT_MODEL_ID = 'mail';

/** The header that marks a follow-up's repeats as one request. */
const IDEMPOTENCY_HEADER = 'Idempotency-Key';

const UNSUPPORTED_SETTINGS = [
  'temperature',
  'topP',
  'topK',
  'maxOutputTokens',
  'stopSequences',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'responseFormat',
  'toolChoice',
] as const;

const bodyStream: ResponseHandler<ReadableStream<Uint8Array>> = async ({ response }) => {
  if (!response.body) throw new Error('the MAIL server answered without a body');
  return { value: response.body };
};

/** A MAIL swarm as an AI SDK language model (LanguageModelV3). */
export class MailLanguageModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3';
  readonly supportedUrls = {};
  private serverInfo: Promise<MailServerInfo | undefined> | undefined;

  constructor(
    readonly modelId: string,
    private readonly config: MailModelConfig,
  ) {}

  get provider(): string {
    return this.config.provider;
  }

  /** `GET /` (the swarm's name and, S4, its breakpoint tools), asked once per model; undefined when it fails. */
  private info(signal?: AbortSignal): Promise<MailServerInfo | undefined> {
    this.serverInfo ??= getFromApi({
      url: `${this.config.baseUrl}/`,
      headers: this.config.headers(),
      failedResponseHandler: mailFailedResponseHandler,
      successfulResponseHandler: createJsonResponseHandler(mailServerInfoSchema),
      abortSignal: signal,
      fetch: this.config.fetch,
    }).then(
      ({ value }) => value,
      () => undefined,
    );
    return this.serverInfo;
  }

  /** A warning when the model id names a swarm other than the one the server serves. */
  private async swarmWarning(signal?: AbortSignal): Promise<SharedV3Warning | undefined> {
    if (this.modelId === DEFAULT_MODEL_ID) return undefined;
    const served = (await this.info(signal))?.swarm?.name;
    if (!served || served === this.modelId) return undefined;
    return {
      type: 'other',
      message:
        `model '${this.modelId}' names a swarm the MAIL server at ${this.config.baseUrl} does not serve: ` +
        `it serves '${served}', which answers this call (use mail('${served}'), or the server of '${this.modelId}')`,
    };
  }

  private async prepare(options: LanguageModelV3CallOptions, stream: boolean) {
    const mailOptions =
      (await parseProviderOptions({
        provider: 'mail',
        providerOptions: options.providerOptions,
        schema: mailProviderOptionsSchema,
      })) ?? {};
    const input = convertToMailMessage(options.prompt, mailOptions.taskId);
    const warnings: SharedV3Warning[] = [...input.warnings];
    const wrongSwarm = await this.swarmWarning(options.abortSignal);
    if (wrongSwarm) warnings.push(wrongSwarm);
    for (const setting of UNSUPPORTED_SETTINGS) {
      const value = options[setting];
      if (value === undefined || (setting === 'toolChoice' && options.toolChoice?.type === 'auto')) continue;
      warnings.push({ type: 'unsupported', feature: setting });
    }
    const tools = options.tools ?? [];
    const toolNames = new Set(tools.map((t) => t.name));
    if (tools.length) {
      const listed = (await this.info(options.abortSignal))?.swarm?.breakpoint_tools;
      const known = listed ? new Set(listed.map((t) => t.name)) : undefined;
      for (const tool of tools) {
        if (tool.type !== 'function' || (known && !known.has(tool.name))) {
          warnings.push({
            type: 'unsupported',
            feature: `tool '${tool.name}'`,
            details: 'Only the swarm\'s breakpoint tools are called by a MAIL swarm.',
          });
        }
      }
    }
    // Drawn once per call and sent with every attempt (mail-retry.ts): a new task's id (also
    // so that an abort can cancel it before any event arrives), a follow-up's key.
    const taskId = input.taskId ?? crypto.randomUUID();
    const idempotencyKey = input.resumeFrom ? crypto.randomUUID() : undefined;
    const kwargs: Record<string, unknown> = {};
    if (input.toolResults) kwargs.breakpoint_tool_call_result = input.toolResults;
    if (mailOptions.maxSteps !== undefined) kwargs.max_steps = mailOptions.maxSteps;
    if (mailOptions.timeout !== undefined) kwargs.timeout = mailOptions.timeout;
    const body: Record<string, unknown> = {
      body: input.body,
      subject: mailOptions.subject ?? 'AI SDK Request',
      msg_type: 'request',
      task_id: taskId,
      stream,
      // the JSON answer's events give the agent trace (a stream has them anyway)
      show_events: !stream,
    };
    if (mailOptions.entrypoint) body.entrypoint = mailOptions.entrypoint;
    if (input.resumeFrom) body.resume_from = input.resumeFrom;
    if (Object.keys(kwargs).length) body.kwargs = kwargs;
    // `headers` for every request of the call; `postHeaders` for its POST /message
    const headers = combineHeaders(this.config.headers(), options.headers);
    const postHeaders = combineHeaders(headers, idempotencyKey ? { [IDEMPOTENCY_HEADER]: idempotencyKey } : {});
    return { body, taskId, headers, postHeaders, warnings, mailOptions, toolNames };
  }

  private get retries(): MailRetrySettings {
    return this.config.retries ?? DEFAULT_RETRY_SETTINGS;
  }

  /** S5: `POST /tasks/{id}/cancel`, best effort (a task that already finished, 409, or never started, 404, is left as it is). */
  private async cancelTask(taskId: string, headers: Record<string, string | undefined>): Promise<void> {
    await postJsonToApi({
      url: `${this.config.baseUrl}/tasks/${encodeURIComponent(taskId)}/cancel`,
      headers,
      body: {},
      failedResponseHandler: mailFailedResponseHandler,
      successfulResponseHandler: createJsonResponseHandler(mailServerInfoSchema.passthrough()),
      fetch: this.config.fetch,
    }).catch(() => {});
  }

  /** Cancels the task when the call gives up on a request the server may have taken. */
  private cancelIfSent(taskId: string, headers: Record<string, string | undefined>) {
    return async (error: unknown) => {
      if (mayHaveArrived(error)) await this.cancelTask(taskId, headers);
    };
  }

  /** Cancels the task on the server when the call is aborted. */
  private cancelOnAbort(signal: AbortSignal | undefined, taskId: string, headers: Record<string, string | undefined>) {
    if (!signal) return () => {};
    const cancel = () => void this.cancelTask(taskId, headers);
    if (signal.aborted) {
      cancel();
      return () => {};
    }
    signal.addEventListener('abort', cancel, { once: true });
    return () => signal.removeEventListener('abort', cancel);
  }

  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const mailOptions = await parseProviderOptions({
      provider: 'mail',
      providerOptions: options.providerOptions,
      schema: mailProviderOptionsSchema,
    });
    if (mailOptions?.includeAgentChatter || mailOptions?.includeInternalToolCalls) {
      // the JSON answer has no events of this turn alone: read the stream instead
      const { stream, request, response } = await this.doStream(options);
      const collected = await collectStream(stream);
      return {
        content: collected.content,
        finishReason: collected.finishReason,
        usage: collected.usage ?? mailUsage(undefined),
        providerMetadata: collected.providerMetadata,
        request,
        response: { ...response, id: collected.responseId, modelId: this.modelId },
        warnings: collected.warnings,
      };
    }
    const { body, taskId, headers, postHeaders, warnings } = await this.prepare(options, false);
    const release = this.cancelOnAbort(options.abortSignal, taskId, headers);
    try {
      const send = () =>
        postJsonToApi({
          url: `${this.config.baseUrl}/message`,
          headers: postHeaders,
          body,
          failedResponseHandler: mailFailedResponseHandler,
          successfulResponseHandler: createJsonResponseHandler(mailMessageResponseSchema),
          abortSignal: options.abortSignal,
          fetch: this.config.fetch,
        });
      const { value, rawValue, responseHeaders } = await withRetries(send, {
        settings: this.retries,
        abortSignal: options.abortSignal,
        giveUp: this.cancelIfSent(taskId, headers),
      });
      const status = value.status ?? 'completed';
      const mail = { taskId: value.task_id, taskStatus: status };
      const trace = traceOfEvents(value.events).metadata();
      const content: LanguageModelV3Content[] = [];
      if (status === 'waiting_breakpoint') {
        for (const call of parsePendingCalls(value.response)) {
          content.push({
            type: 'tool-call',
            toolCallId: call.call_id,
            toolName: call.name,
            input: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
            providerMetadata: { mail },
          });
        }
      } else if (status === 'completed') {
        content.push({ type: 'text', text: value.response, providerMetadata: { mail } });
      }
      const extra = status === 'failed' || status === 'cancelled' ? { error: value.response } : {};
      return {
        content,
        finishReason: mapMailFinishReason(status),
        usage: mailUsage(undefined),
        providerMetadata: { mail: { ...mail, ...trace, ...extra } },
        request: { body },
        response: { id: value.task_id, modelId: this.modelId, headers: responseHeaders, body: rawValue },
        warnings,
      };
    } finally {
      release();
    }
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const { body, taskId, headers, postHeaders, warnings, mailOptions, toolNames } = await this.prepare(options, true);
    const release = this.cancelOnAbort(options.abortSignal, taskId, headers);
    const retries = this.retries;
    const giveUp = this.cancelIfSent(taskId, headers);
    const cancel = () => this.cancelTask(taskId, headers);
    let responseHeaders: Record<string, string> | undefined;
    let first: ReadableStream<Uint8Array>;
    try {
      const send = () =>
        postJsonToApi({
          url: `${this.config.baseUrl}/message`,
          headers: postHeaders,
          body,
          failedResponseHandler: mailFailedResponseHandler,
          successfulResponseHandler: bodyStream,
          abortSignal: options.abortSignal,
          fetch: this.config.fetch,
        });
      const answer = await withRetries(send, { settings: retries, abortSignal: options.abortSignal, giveUp });
      first = answer.value;
      responseHeaders = answer.responseHeaders;
    } catch (error) {
      release();
      throw error;
    }
    const mapper = new MailStreamMapper({
      taskId,
      modelId: this.modelId,
      warnings,
      includeRawChunks: options.includeRawChunks,
      includeAgentChatter: mailOptions.includeAgentChatter,
      includeInternalToolCalls: mailOptions.includeInternalToolCalls,
      toolNames,
    });
    const resume = (after: number | undefined) =>
      withRetries(
        () =>
          getFromApi({
            url: `${this.config.baseUrl}/tasks/${encodeURIComponent(taskId)}/events`,
            headers: combineHeaders(headers, { 'last-event-id': String(after ?? 0) }),
            failedResponseHandler: mailFailedResponseHandler,
            successfulResponseHandler: bodyStream,
            abortSignal: options.abortSignal,
            fetch: this.config.fetch,
          }).then((r) => r.value),
        { settings: retries, abortSignal: options.abortSignal },
      );
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      async start(controller) {
        const emit = (parts: LanguageModelV3StreamPart[]) => parts.forEach((p) => controller.enqueue(p));
        emit(mapper.start());
        try {
          await followTask(first, mapper, emit, resume, retries.maxReconnects, options.abortSignal);
        } catch (error) {
          emit(mapper.fail(finalError(error)));
          // the stream gave up on a task that goes on: stop it (an abort already did)
          if (!options.abortSignal?.aborted) await cancel();
        } finally {
          release();
          controller.close();
        }
      },
    });
    return { stream, request: { body }, response: { headers: responseHeaders } };
  }
}

/**
 * Reads the task's events from `source` into `mapper` until its closing event. A stream cut
 * before it (or ended without it) is reopened after the last stored event (`resume`, with
 * `Last-Event-ID`); one that ends with a `storage_error` without an `id` (the turn ended but
 * the server holds its closing event back until the task is stored) is reopened the same
 * way after the event's `retry_after` seconds. At most `maxReconnects` times; then, or when
 * reopening fails, it throws.
 */
async function followTask(
  source: ReadableStream<Uint8Array>,
  mapper: MailStreamMapper,
  emit: (parts: LanguageModelV3StreamPart[]) => void,
  resume: (after: number | undefined) => Promise<ReadableStream<Uint8Array>>,
  maxReconnects: number,
  abortSignal: AbortSignal | undefined,
): Promise<void> {
  for (let reconnects = 0; ; reconnects++) {
    let held: number | undefined;
    let cut: unknown;
    try {
      const reader = parseMailEventStream(source).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        held = storageHold(value as MailSseEvent);
        emit(mapper.handle(value as MailSseEvent));
        if (mapper.closed) {
          await reader.cancel().catch(() => {});
          return;
        }
      }
    } catch (error) {
      if (mapper.closed) return;
      if (abortSignal?.aborted) throw error;
      cut = error;
    }
    if (reconnects >= maxReconnects) {
      if (cut !== undefined) throw cut;
      throw new Error(
        held !== undefined
          ? `the task ended, but the MAIL server still holds its answer back (its store has not committed the task) after ${maxReconnects} tries: ask again later`
          : 'the MAIL stream ended before its closing event',
      );
    }
    if (held !== undefined && cut === undefined) await delay(held * 1000, { abortSignal });
    source = await resume(mapper.lastSeq);
  }
}
