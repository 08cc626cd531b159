import type { LanguageModelV3Usage } from '@ai-sdk/provider';
import { mailPendingCallsSchema, type MailPendingCall, type MailUsage } from './mail-api-types';

export type Json = Record<string, unknown>;

/** S7's usage in the V3 nested shape (all undefined without it). */
export function mailUsage(usage: MailUsage | null | undefined): LanguageModelV3Usage {
  const input = usage?.input_tokens ?? undefined;
  const cached = usage?.cached_input_tokens ?? undefined;
  const output = usage?.output_tokens ?? undefined;
  const reasoning = usage?.reasoning_tokens ?? undefined;
  return {
    inputTokens: {
      total: input,
      noCache: input !== undefined && cached !== undefined ? input - cached : input,
      cacheRead: cached,
      cacheWrite: undefined,
    },
    outputTokens: {
      total: output,
      text: output !== undefined && reasoning !== undefined ? output - reasoning : undefined,
      reasoning,
    },
    raw: usage ? (usage as Json) : undefined,
  } as LanguageModelV3Usage;
}

export function obj(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** Parses the pending breakpoint calls of a closing `response` (a JSON array). */
export function parsePendingCalls(response: string | null | undefined): MailPendingCall[] {
  if (!response) return [];
  try {
    const parsed = mailPendingCallsSchema.safeParse(JSON.parse(response));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

export function callInput(args: unknown): string {
  return typeof args === 'string' ? args : JSON.stringify(args ?? {});
}


/**
 * For a `storage_error` event without an `id` (the task's turn ended, but the server holds
 * its closing event back until its store has committed the task): the seconds to wait
 * before asking again (its `extra_data.retry_after`, 1 when missing, at most 60). Undefined
 * for any other event.
 */
export function storageHold(event: { event: string; id?: number; data: unknown }): number | undefined {
  if (event.event !== 'storage_error' || event.id !== undefined) return undefined;
  const wait = Number(obj(obj(event.data).extra_data).retry_after ?? 1);
  return Number.isFinite(wait) ? Math.min(Math.max(wait, 0), 60) : 1;
}
