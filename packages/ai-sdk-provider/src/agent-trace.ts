import { obj, str, type Json } from './mail-event-data';

/** One step of a turn: an agent and the tools it called, in order. */
export interface AgentStep {
  agent: string;
  tools: string[];
}

const CALLED = /^agent (\S+) called /;

/**
 * The agents that worked on a turn, compactly: consecutive tool calls of one agent are one
 * step (`[{agent: 'supervisor', tools: ['send_request']}, {agent: 'math', tools:
 * ['calculate_expression', 'send_response']}, ...]`). `currentAgent` is the agent of the
 * last step: the one that ended the turn (answered, or called a breakpoint tool).
 */
export class AgentTrace {
  readonly steps: AgentStep[] = [];

  /** Notes one event; only `tool_call` events (`agent X called T`) move the trace. */
  note(event: string, data: unknown): void {
    if (event !== 'tool_call') return;
    const fields = obj(data);
    const extra = obj(fields.extra_data);
    const agent = str(extra.agent) ?? CALLED.exec(str(fields.description) ?? '')?.[1];
    if (agent === undefined) return;
    const tool = str(extra.tool_name);
    const last = this.steps.at(-1);
    if (last?.agent === agent) {
      if (tool !== undefined) last.tools.push(tool);
    } else {
      this.steps.push({ agent, tools: tool !== undefined ? [tool] : [] });
    }
  }

  get currentAgent(): string | null {
    return this.steps.at(-1)?.agent ?? null;
  }

  /** `{currentAgent, agentTrace}` for `providerMetadata.mail`. */
  metadata(): Json {
    return { currentAgent: this.currentAgent, agentTrace: this.steps.map((s) => ({ ...s, tools: [...s.tools] })) };
  }
}

function fromUser(event: Json): boolean {
  const message = obj(obj(obj(obj(event.data).extra_data).full_message).message);
  return event.event === 'new_message' && obj(message.sender).address_type === 'user';
}

/**
 * The trace of the events `POST /message` returns with `show_events` (the whole task's):
 * those from the caller's last message on, i.e. this turn's (after a breakpoint, the turn
 * that paused on it too).
 */
export function traceOfEvents(events: unknown): AgentTrace {
  const trace = new AgentTrace();
  const list = Array.isArray(events) ? events.map(obj) : [];
  let start = 0;
  list.forEach((event, index) => {
    if (fromUser(event)) start = index;
  });
  for (const event of list.slice(start)) trace.note(str(event.event) ?? '', event.data);
  return trace;
}
