import type { LanguageModelV3StreamPart, SharedV3ProviderMetadata, SharedV3Warning } from '@ai-sdk/provider';
import {
  mailClosingEventSchema,
  mailFullMessageSchema,
  mailPendingCallsSchema,
  mailTokenDeltaSchema,
  type MailPendingCall,
} from './mail-api-types';
import { AgentTrace } from './agent-trace';
import { callInput, mailUsage, obj, parsePendingCalls, str, type Json } from './mail-event-data';
import type { MailSseEvent } from './mail-sse';
import { mapMailFinishReason, type MailTaskStatus } from './map-finish-reason';

export interface MailStreamOptions {
  taskId: string;
  modelId: string;
  warnings: SharedV3Warning[];
  includeRawChunks?: boolean;
  includeAgentChatter?: boolean;
  includeInternalToolCalls?: boolean;
  /** Names of the caller's tools: their calls arrive as pending breakpoint calls, not as internal calls. */
  toolNames?: ReadonlySet<string>;
}

type Part = LanguageModelV3StreamPart;

/**
 * Maps MAIL's server-sent events to LanguageModelV3 stream parts (brief §5.3): one `finish`
 * at the closing `task_complete`/`task_error` (the event without an `id:` line), the answer
 * as text (live `token_delta`s as they come, then whatever of `response` was not streamed),
 * pending breakpoint calls as tool calls, reasoning as reasoning blocks.
 */
export class MailStreamMapper {
  /** The sequence number of the newest stored event seen (for `Last-Event-ID`). */
  lastSeq: number | undefined;
  closed = false;
  private sawBreakpoint = false;
  private pendingFromEvent: MailPendingCall[] | undefined;
  private textOpen = false;
  private streamedAnswer = '';
  private openReasoning: string | undefined;
  private openReasoningKey: string | undefined;
  private streamedReasoningAgents = new Set<string>();
  private storedErrors: string[] = [];
  private reasoningCount = 0;
  private readonly trace = new AgentTrace();

  constructor(private readonly options: MailStreamOptions) {}

  private meta(extra: Json = {}, status?: MailTaskStatus): SharedV3ProviderMetadata {
    const mail: Json = { taskId: this.options.taskId, ...extra };
    if (status !== undefined) mail.taskStatus = status;
    return { mail } as SharedV3ProviderMetadata;
  }

  private get textId(): string {
    return `text-${this.options.taskId}`;
  }

  /** The first parts of the stream, sent once the server answered 200. */
  start(): Part[] {
    return [
      { type: 'stream-start', warnings: this.options.warnings },
      { type: 'response-metadata', id: this.options.taskId, modelId: this.options.modelId },
    ];
  }

  private closeReasoning(out: Part[]): void {
    if (this.openReasoning !== undefined) {
      out.push({ type: 'reasoning-end', id: this.openReasoning, providerMetadata: this.meta() });
      this.openReasoning = undefined;
    }
  }

  private reasoningBlock(out: Part[], id: string, text: string, extra: Json = {}): void {
    this.closeReasoning(out);
    const providerMetadata = this.meta(extra);
    out.push({ type: 'reasoning-start', id, providerMetadata });
    out.push({ type: 'reasoning-delta', id, delta: text, providerMetadata });
    out.push({ type: 'reasoning-end', id, providerMetadata });
  }

  private reasoningDelta(out: Part[], id: string, delta: string, extra: Json): void {
    if (this.openReasoning !== id) {
      this.closeReasoning(out);
      out.push({ type: 'reasoning-start', id, providerMetadata: this.meta(extra) });
      this.openReasoning = id;
    }
    out.push({ type: 'reasoning-delta', id, delta, providerMetadata: this.meta(extra) });
  }

  private textDelta(out: Part[], delta: string): void {
    this.closeReasoning(out);
    if (!this.textOpen) {
      out.push({ type: 'text-start', id: this.textId, providerMetadata: this.meta() });
      this.textOpen = true;
    }
    if (delta !== '') {
      out.push({ type: 'text-delta', id: this.textId, delta, providerMetadata: this.meta() });
    }
  }

  /** The parts for one event. */
  handle(event: MailSseEvent): Part[] {
    const out: Part[] = [];
    if (this.closed || event.event === 'ping') return out;
    if (this.options.includeRawChunks) out.push({ type: 'raw', rawValue: event });
    if (event.id !== undefined) this.lastSeq = event.id;
    this.trace.note(event.event, event.data);
    const data = obj(event.data);
    const extra = obj(data.extra_data);
    const isClosing = event.id === undefined && (event.event === 'task_complete' || event.event === 'task_error');
    if (isClosing) {
      this.close(event.event, event.data, out);
      return out;
    }
    switch (event.event) {
      case 'token_delta':
        this.tokenDelta(event.data, out);
        break;
      case 'new_message':
        this.newMessage(extra, event.id, out);
        break;
      case 'tool_call':
        this.toolCall(extra, out);
        break;
      case 'action_complete':
      case 'action_error':
        this.actionResult(event.event, extra, out);
        break;
      case 'breakpoint_tool_call': {
        this.sawBreakpoint = true;
        const calls = mailPendingCallsSchema.safeParse(extra.calls);
        if (calls.success) this.pendingFromEvent = [...(this.pendingFromEvent ?? []), ...calls.data];
        break;
      }
      case 'task_error':
      case 'storage_error':
      case 'agent_error':
        // (a storage_error without an id only says the closing event is held back: the
        // provider asks again for it)
        if (event.id !== undefined) this.storedErrors.push(str(data.description) ?? event.event);
        break;
    }
    return out;
  }

  private tokenDelta(raw: unknown, out: Part[]): void {
    const parsed = mailTokenDeltaSchema.safeParse(raw);
    if (!parsed.success || parsed.data.delta === '') return;
    const { kind, delta, agent, call_id } = parsed.data;
    if (kind === 'answer') {
      this.textDelta(out, delta);
      this.streamedAnswer += delta;
    } else if (kind === 'reasoning' || (kind === 'text' && this.options.includeAgentChatter)) {
      const who = agent ?? 'agent';
      if (kind === 'reasoning') this.streamedReasoningAgents.add(who);
      const key = `${who}:${call_id ?? ''}:${kind}`;
      if (this.openReasoning === undefined || this.openReasoningKey !== key) {
        this.closeReasoning(out);
        this.openReasoningKey = key;
      }
      const id = this.openReasoning ?? `reasoning-${this.options.taskId}-${this.reasoningCount++}`;
      this.reasoningDelta(out, id, delta, { agent: who, kind });
    }
  }

  private newMessage(extra: Json, seq: number | undefined, out: Part[]): void {
    if (!this.options.includeAgentChatter) return;
    const parsed = mailFullMessageSchema.safeParse(extra.full_message);
    if (!parsed.success) return;
    const { msg_type, message } = parsed.data;
    if (msg_type === 'broadcast_complete' || message?.sender?.address_type !== 'agent') return;
    const sender = message.sender.address ?? 'agent';
    const recipients = message.recipients
      ? message.recipients.map((r) => r.address ?? '')
      : [message.recipient?.address ?? ''];
    const text = `${sender} → ${recipients.join(', ')}: ${message.subject ?? ''}\n${message.body ?? ''}`;
    this.reasoningBlock(out, `message-${seq ?? this.reasoningCount++}`, text, {
      sender,
      recipients,
      msg_type: msg_type ?? null,
      seq: seq ?? null,
    });
  }

  private toolCall(extra: Json, out: Part[]): void {
    const name = str(extra.tool_name);
    const callId = str(extra.tool_call_id) ?? `call-${this.reasoningCount++}`;
    const reasoning = Array.isArray(extra.reasoning) ? extra.reasoning.join('\n') : str(extra.reasoning);
    const agent = str(extra.agent);
    if (reasoning && !(agent !== undefined ? this.streamedReasoningAgents.has(agent) : this.streamedReasoningAgents.size > 0)) {
      this.reasoningBlock(out, `reasoning-${callId}`, reasoning, { toolCallId: callId });
    }
    this.streamedReasoningAgents.clear();
    if (!name || !this.options.includeInternalToolCalls || this.options.toolNames?.has(name)) return;
    this.closeReasoning(out);
    out.push({
      type: 'tool-call',
      toolCallId: callId,
      toolName: name,
      input: callInput(extra.tool_args),
      providerExecuted: true,
      dynamic: true,
      providerMetadata: this.meta(),
    });
  }

  private actionResult(kind: string, extra: Json, out: Part[]): void {
    const name = str(extra.tool_name);
    const callId = str(extra.tool_call_id);
    if (!this.options.includeInternalToolCalls || !name || !callId || this.options.toolNames?.has(name)) return;
    const isError = kind === 'action_error';
    out.push({
      type: 'tool-result',
      toolCallId: callId,
      toolName: name,
      result: (isError ? extra.error : extra.content) ?? null,
      isError,
      dynamic: true,
      providerMetadata: this.meta(),
    } as Part);
  }

  private close(kind: string, raw: unknown, out: Part[]): void {
    this.closed = true;
    this.closeReasoning(out);
    const parsed = mailClosingEventSchema.safeParse(raw);
    const data = parsed.success ? parsed.data : {};
    const response = data.response ?? '';
    const status: MailTaskStatus =
      data.status ?? (kind === 'task_error' ? 'failed' : this.sawBreakpoint ? 'waiting_breakpoint' : 'completed');
    const extra: Json = this.trace.metadata();
    if (status === 'waiting_breakpoint') {
      const calls = this.pendingFromEvent?.length ? this.pendingFromEvent : parsePendingCalls(response);
      if (this.textOpen) out.push({ type: 'text-end', id: this.textId, providerMetadata: this.meta({}, status) });
      for (const call of calls) {
        out.push({
          type: 'tool-call',
          toolCallId: call.call_id,
          toolName: call.name,
          input: callInput(call.arguments),
          providerMetadata: this.meta({}, status),
        });
      }
    } else if (status === 'completed') {
      // the part of the answer the token deltas did not already stream
      const rest = response.startsWith(this.streamedAnswer) ? response.slice(this.streamedAnswer.length) : '';
      if (rest !== '' || !this.textOpen) this.textDelta(out, rest);
      out.push({ type: 'text-end', id: this.textId, providerMetadata: this.meta({}, status) });
    } else {
      if (this.textOpen) out.push({ type: 'text-end', id: this.textId, providerMetadata: this.meta({}, status) });
      extra.error = response;
    }
    if (this.storedErrors.length) extra.storedErrors = this.storedErrors;
    out.push({
      type: 'finish',
      finishReason: mapMailFinishReason(status),
      usage: mailUsage(data.usage),
      providerMetadata: this.meta(extra, status),
    });
  }

  /** The parts that end a stream cut before its closing event: an `error`, then `finish`. */
  fail(error: unknown): Part[] {
    const out: Part[] = [];
    if (this.closed) return out;
    this.closed = true;
    this.closeReasoning(out);
    if (this.textOpen) out.push({ type: 'text-end', id: this.textId, providerMetadata: this.meta() });
    out.push({ type: 'error', error });
    out.push({
      type: 'finish',
      finishReason: { unified: 'error', raw: undefined },
      usage: mailUsage(undefined),
      providerMetadata: this.meta({
        error: error instanceof Error ? error.message : String(error),
        ...this.trace.metadata(),
      }),
    });
    return out;
  }
}

/** A TransformStream form of {@link MailStreamMapper} (no resume: a cut stream ends with an error). */
export function createMailStreamTransformer(options: MailStreamOptions): TransformStream<MailSseEvent, Part> {
  const mapper = new MailStreamMapper(options);
  return new TransformStream({
    start(controller) {
      for (const part of mapper.start()) controller.enqueue(part);
    },
    transform(event, controller) {
      for (const part of mapper.handle(event)) controller.enqueue(part);
    },
    flush(controller) {
      for (const part of mapper.fail(new Error('the MAIL stream ended before the turn ended'))) {
        controller.enqueue(part);
      }
    },
  });
}
