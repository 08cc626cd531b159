import {
  InvalidPromptError,
  type LanguageModelV3Prompt,
  type LanguageModelV3ToolResultOutput,
  type SharedV3ProviderOptions,
  type SharedV3Warning,
} from '@ai-sdk/provider';

/** One answer to a pending breakpoint call: `kwargs.breakpoint_tool_call_result` items. */
export interface MailToolResult {
  call_id: string;
  content: string;
}

export interface MailMessageInput {
  /** The text of the last user message (empty when resuming from tool results). */
  body: string;
  /** The task to continue, recovered from the prompt's last assistant message. */
  taskId?: string;
  resumeFrom?: 'user_response' | 'breakpoint_tool_call';
  toolResults?: MailToolResult[];
  warnings: SharedV3Warning[];
}

function taskIdOf(options: SharedV3ProviderOptions | undefined): string | undefined {
  const value = options?.mail?.taskId;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The `taskId` stamped (as `providerMetadata.mail.taskId`) on the last assistant message that has one. */
export function findTaskId(prompt: LanguageModelV3Prompt): string | undefined {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const message = prompt[i]!;
    if (message.role !== 'assistant') continue;
    const fromMessage = taskIdOf(message.providerOptions);
    if (fromMessage) return fromMessage;
    for (let j = message.content.length - 1; j >= 0; j--) {
      const fromPart = taskIdOf(message.content[j]!.providerOptions);
      if (fromPart) return fromPart;
    }
  }
  return undefined;
}

/** A tool output as the text MAIL hands back to the agent (JSON values are stringified). */
export function toolOutputText(output: LanguageModelV3ToolResultOutput): string {
  switch (output.type) {
    case 'text':
    case 'error-text':
      return output.value;
    case 'json':
    case 'error-json':
      return JSON.stringify(output.value);
    case 'execution-denied':
      return output.reason ?? 'The tool call was denied.';
    case 'content':
      return output.value
        .map((part) => (part.type === 'text' ? part.text : JSON.stringify(part)))
        .join('\n');
  }
}

/**
 * Builds the `POST /message` input from an AI SDK prompt. MAIL keeps the conversation on the
 * server, so only the newest turn is sent: the last user message, or the tool results that
 * answer the breakpoint calls of the previous assistant message.
 */
export function convertToMailMessage(prompt: LanguageModelV3Prompt, explicitTaskId?: string): MailMessageInput {
  const warnings: SharedV3Warning[] = [];
  if (prompt.some((m) => m.role === 'system')) {
    warnings.push({
      type: 'unsupported',
      feature: 'system messages',
      details: 'A MAIL swarm has its own system prompts; system messages are not sent.',
    });
  }
  const hasFiles = prompt.some(
    (m) => (m.role === 'user' || m.role === 'assistant') && m.content.some((p) => p.type === 'file'),
  );
  if (hasFiles) {
    warnings.push({ type: 'unsupported', feature: 'file parts', details: 'Only text is sent to the swarm.' });
  }

  const taskId = explicitTaskId ?? findTaskId(prompt);
  let lastAssistant = -1;
  for (let i = prompt.length - 1; i >= 0; i--) {
    if (prompt[i]!.role === 'assistant') {
      lastAssistant = i;
      break;
    }
  }
  const after = prompt.slice(lastAssistant + 1).filter((m) => m.role !== 'system');
  const last = after[after.length - 1];

  if (last?.role === 'tool') {
    const toolResults: MailToolResult[] = [];
    for (const message of after) {
      if (message.role !== 'tool') continue;
      for (const part of message.content) {
        if (part.type === 'tool-result') {
          toolResults.push({ call_id: part.toolCallId, content: toolOutputText(part.output) });
        }
      }
    }
    if (!taskId) {
      throw new InvalidPromptError({
        prompt,
        message:
          'Tool results need the task they answer: the previous assistant message carries no ' +
          'providerMetadata.mail.taskId (keep it in the messages, or pass providerOptions.mail.taskId).',
      });
    }
    return { body: '', taskId, resumeFrom: 'breakpoint_tool_call', toolResults, warnings };
  }

  const lastUser = [...after].reverse().find((m) => m.role === 'user');
  if (!lastUser || lastUser.role !== 'user') {
    throw new InvalidPromptError({ prompt, message: 'The prompt has no user message after the last answer.' });
  }
  const body = lastUser.content
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
  return taskId
    ? { body, taskId, resumeFrom: 'user_response', warnings }
    : { body, warnings };
}
