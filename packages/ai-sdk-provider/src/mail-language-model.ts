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
  getFromApi,
  parseProviderOptions,
  postJsonToApi,
  type FetchFunction,
  type ResponseHandler,
} from '@ai-sdk/provider-utils';
import { mailMessageResponseSchema, mailServerInfoSchema } from './mail-api-types';
import { collectStream } from './collect-stream';
import { convertToMailMessage } from './convert-to-mail-message';
import { mailFailedResponseHandler } from './mail-error';
import { mailProviderOptionsSchema } from './mail-options';
import { parseMailEventStream, type MailSseEvent } from './mail-sse';
import { mailUsage, parsePendingCalls } from './mail-event-data';
import { MailStreamMapper } from './mail-stream-transformer';
import { mapMailFinishReason } from './map-finish-reason';

export interface MailModelConfig {
  provider: string;
  baseUrl: string;
  headers: () => Record<string, string | undefined>;
  fetch?: FetchFunction;
}

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
  private breakpointTools: Promise<Set<string> | undefined> | undefined;

  constructor(
    readonly modelId: string,
    private readonly config: MailModelConfig,
  ) {}

  get provider(): string {
    return this.config.provider;
  }

  /** S4: the swarm's breakpoint tool names from `GET /`, when the server lists them. */
  private async knownBreakpointTools(signal?: AbortSignal): Promise<Set<string> | undefined> {
    this.breakpointTools ??= getFromApi({
      url: `${this.config.baseUrl}/`,
      headers: this.config.headers(),
      failedResponseHandler: mailFailedResponseHandler,
      successfulResponseHandler: createJsonResponseHandler(mailServerInfoSchema),
      abortSignal: signal,
      fetch: this.config.fetch,
    }).then(
      ({ value }) => {
        const tools = value.swarm?.breakpoint_tools;
        return tools ? new Set(tools.map((t) => t.name)) : undefined;
      },
      () => undefined,
    );
    return this.breakpointTools;
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
    for (const setting of UNSUPPORTED_SETTINGS) {
      const value = options[setting];
      if (value === undefined || (setting === 'toolChoice' && options.toolChoice?.type === 'auto')) continue;
      warnings.push({ type: 'unsupported', feature: setting });
    }
    const tools = options.tools ?? [];
    const toolNames = new Set(tools.map((t) => t.name));
    if (tools.length) {
      const known = await this.knownBreakpointTools(options.abortSignal);
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
    // A new task gets its id here, so that an abort can cancel it before any event arrives.
    const taskId = input.taskId ?? crypto.randomUUID();
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
      show_events: false,
    };
    if (mailOptions.entrypoint) body.entrypoint = mailOptions.entrypoint;
    if (input.resumeFrom) body.resume_from = input.resumeFrom;
    if (Object.keys(kwargs).length) body.kwargs = kwargs;
    return { body, taskId, warnings, mailOptions, toolNames };
  }

  private headers(options: LanguageModelV3CallOptions) {
    return combineHeaders(this.config.headers(), options.headers);
  }

  /** Cancels the task on the server when the call is aborted (S5: `POST /tasks/{id}/cancel`). */
  private cancelOnAbort(signal: AbortSignal | undefined, taskId: string, headers: Record<string, string | undefined>) {
    if (!signal) return () => {};
    const cancel = () => {
      postJsonToApi({
        url: `${this.config.baseUrl}/tasks/${encodeURIComponent(taskId)}/cancel`,
        headers,
        body: {},
        failedResponseHandler: mailFailedResponseHandler,
        successfulResponseHandler: createJsonResponseHandler(mailServerInfoSchema.passthrough()),
        fetch: this.config.fetch,
      }).catch(() => {}); // already finished (409) or gone: nothing to stop
    };
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
    const { body, taskId, warnings } = await this.prepare(options, false);
    const headers = this.headers(options);
    const release = this.cancelOnAbort(options.abortSignal, taskId, headers);
    try {
      const { value, rawValue, responseHeaders } = await postJsonToApi({
        url: `${this.config.baseUrl}/message`,
        headers,
        body,
        failedResponseHandler: mailFailedResponseHandler,
        successfulResponseHandler: createJsonResponseHandler(mailMessageResponseSchema),
        abortSignal: options.abortSignal,
        fetch: this.config.fetch,
      });
      const status = value.status ?? 'completed';
      const mail = { taskId: value.task_id, taskStatus: status };
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
        providerMetadata: { mail: { ...mail, ...extra } },
        request: { body },
        response: { id: value.task_id, modelId: this.modelId, headers: responseHeaders, body: rawValue },
        warnings,
      };
    } finally {
      release();
    }
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const { body, taskId, warnings, mailOptions, toolNames } = await this.prepare(options, true);
    const headers = this.headers(options);
    const release = this.cancelOnAbort(options.abortSignal, taskId, headers);
    let responseHeaders: Record<string, string> | undefined;
    let first: ReadableStream<Uint8Array>;
    try {
      const answer = await postJsonToApi({
        url: `${this.config.baseUrl}/message`,
        headers,
        body,
        failedResponseHandler: mailFailedResponseHandler,
        successfulResponseHandler: bodyStream,
        abortSignal: options.abortSignal,
        fetch: this.config.fetch,
      });
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
      getFromApi({
        url: `${this.config.baseUrl}/tasks/${encodeURIComponent(taskId)}/events`,
        headers: combineHeaders(headers, { 'last-event-id': String(after ?? 0) }),
        failedResponseHandler: mailFailedResponseHandler,
        successfulResponseHandler: bodyStream,
        abortSignal: options.abortSignal,
        fetch: this.config.fetch,
      }).then((r) => r.value);
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      async start(controller) {
        const emit = (parts: LanguageModelV3StreamPart[]) => parts.forEach((p) => controller.enqueue(p));
        emit(mapper.start());
        let source: ReadableStream<Uint8Array> | undefined = first;
        let resumed = false;
        try {
          while (source && !mapper.closed) {
            try {
              const reader = parseMailEventStream(source).getReader();
              for (;;) {
                const { done, value } = await reader.read();
                if (done) break;
                emit(mapper.handle(value as MailSseEvent));
                if (mapper.closed) {
                  await reader.cancel().catch(() => {});
                  break;
                }
              }
              if (mapper.closed) break;
              throw new Error('the MAIL stream ended before its closing event');
            } catch (error) {
              if (mapper.closed) break;
              if (options.abortSignal?.aborted || resumed) throw error;
              resumed = true; // one resume per cut stream: the replay ends with the closing event
              source = await resume(mapper.lastSeq);
            }
          }
        } catch (error) {
          emit(mapper.fail(error));
        } finally {
          release();
          controller.close();
        }
      },
    });
    return { stream, request: { body }, response: { headers: responseHeaders } };
  }
}
