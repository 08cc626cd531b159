import { z } from 'zod/v4';

/** Per-call settings, passed as `providerOptions: { mail: {...} }`. */
export const mailProviderOptionsSchema = z.object({
  /** Continue this task (else the task id of the prompt's last assistant message, else a new task). */
  taskId: z.string().min(1).max(256).optional(),
  /** The agent to address (it must have `enable_entrypoint`). */
  entrypoint: z.string().optional(),
  /** The message's subject (default `AI SDK Request`). */
  subject: z.string().optional(),
  /** `kwargs.max_steps`: a positive integer. */
  maxSteps: z.number().int().positive().optional(),
  /** `kwargs.timeout`, in seconds. */
  timeout: z.number().positive().optional(),
  /** Show agent-to-agent messages (and agent text deltas) as reasoning parts. */
  includeAgentChatter: z.boolean().optional(),
  /** Show the agents' own tool calls as provider-executed dynamic tool calls. */
  includeInternalToolCalls: z.boolean().optional(),
});
export type MailProviderOptions = z.infer<typeof mailProviderOptionsSchema>;
