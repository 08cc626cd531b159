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

