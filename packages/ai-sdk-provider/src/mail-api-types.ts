import { z } from 'zod/v4';

/** The JSON answer of `POST /message` without `stream`. */
export const mailMessageResponseSchema = z.looseObject({
  response: z.string(),
  task_id: z.string(),
  status: z.string().nullish(),
  events: z.unknown().nullish(),
});
export type MailMessageResponse = z.infer<typeof mailMessageResponseSchema>;

/** S7: token usage of the task's LLM agents (absent for scripted swarms). */
export const mailUsageSchema = z.looseObject({
  input_tokens: z.number().nullish(),
  output_tokens: z.number().nullish(),
  reasoning_tokens: z.number().nullish(),
  cached_input_tokens: z.number().nullish(),
});
export type MailUsage = z.infer<typeof mailUsageSchema>;

/** The closing `task_complete` / `task_error` (no `id:` line). */
export const mailClosingEventSchema = z.looseObject({
  timestamp: z.string().nullish(),
  task_id: z.string().nullish(),
  response: z.string().nullish(),
  status: z.string().nullish(),
  usage: mailUsageSchema.nullish(),
});
export type MailClosingEvent = z.infer<typeof mailClosingEventSchema>;

/** A stored event (with an `id:` line). */
export const mailStoredEventSchema = z.looseObject({
  timestamp: z.string().nullish(),
  description: z.string().nullish(),
  task_id: z.string().nullish(),
  extra_data: z.record(z.string(), z.unknown()).nullish(),
});
export type MailStoredEvent = z.infer<typeof mailStoredEventSchema>;

/** An ephemeral live-token event (`event: token_delta`, no `id:` line). */
export const mailTokenDeltaSchema = z.looseObject({
  task_id: z.string().nullish(),
  agent: z.string().nullish(),
  kind: z.string(),
  delta: z.string(),
  call_id: z.string().nullish(),
});
export type MailTokenDelta = z.infer<typeof mailTokenDeltaSchema>;

/** One pending breakpoint call (the closing `response` array, or S2's `extra_data.calls`). */
export const mailPendingCallSchema = z.looseObject({
  call_id: z.string(),
  name: z.string(),
  arguments: z.unknown(),
});
export type MailPendingCall = z.infer<typeof mailPendingCallSchema>;
export const mailPendingCallsSchema = z.array(mailPendingCallSchema);

/** `GET /`: the server and its swarm (S4 adds `breakpoint_tools`). */
export const mailServerInfoSchema = z.looseObject({
  swarm: z
    .looseObject({
      name: z.string().nullish(),
      breakpoint_tools: z
        .array(z.looseObject({ name: z.string() }))
        .nullish(),
    })
    .nullish(),
});
export type MailServerInfo = z.infer<typeof mailServerInfoSchema>;

/** `{"detail": ...}`, the body of every error answer. */
export const mailErrorSchema = z.looseObject({ detail: z.unknown() });
export type MailErrorData = z.infer<typeof mailErrorSchema>;

/** A MAIL message inside `new_message`'s `extra_data.full_message`. */
export const mailFullMessageSchema = z.looseObject({
  msg_type: z.string().nullish(),
  message: z
    .looseObject({
      sender: z.looseObject({ address_type: z.string().nullish(), address: z.string().nullish() }).nullish(),
      recipient: z.looseObject({ address: z.string().nullish() }).nullish(),
      recipients: z.array(z.looseObject({ address: z.string().nullish() })).nullish(),
      subject: z.string().nullish(),
      body: z.string().nullish(),
    })
    .nullish(),
});
