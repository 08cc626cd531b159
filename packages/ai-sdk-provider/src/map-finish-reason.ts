import type { LanguageModelV3FinishReason } from '@ai-sdk/provider';

/** The task states a turn can end in (the `status` of `POST /message` and, with S1, of the closing event). */
export type MailTaskStatus = 'completed' | 'waiting_breakpoint' | 'failed' | 'cancelled' | (string & {});

export function mapMailFinishReason(status: MailTaskStatus | undefined | null): LanguageModelV3FinishReason {
  switch (status) {
    case 'completed':
      return { unified: 'stop', raw: status };
    case 'waiting_breakpoint':
      return { unified: 'tool-calls', raw: status };
    case 'failed':
    case 'cancelled':
      return { unified: 'error', raw: status };
    default:
      return { unified: 'other', raw: status ?? undefined };
  }
}
