// The page's state: who is signed in, the swarm's agents, and the current task with its
// events. Views subscribe with on(); the data itself comes from api.js only.

const listeners = new Set();

export const store = {
  me: null, // GET /whoami
  swarm: null, // GET / .swarm
  agents: null, // GET /ui/agents
  taskId: null,
  events: [], // every event of the current task, in order (token_delta excluded)
  running: false,
  pendingCalls: null, // breakpoint calls the current task waits on, or null

  on(listener) { listeners.add(listener); return () => listeners.delete(listener); },
  emit(kind, payload) { for (const listener of listeners) listener(kind, payload); },

  /** Start over with another task (null: a new conversation). */
  setTask(taskId) {
    this.taskId = taskId;
    this.events = [];
    this.pendingCalls = null;
    this.setRunning(false);
    this.emit("task", taskId);
  },

  setRunning(running) {
    if (this.running === running) return;
    this.running = running;
    this.emit("running", running);
  },

  /** One event from a stream or a replay. */
  add(event) {
    if (event.data && typeof event.data === "object" && event.data.task_id && !this.taskId) {
      this.taskId = event.data.task_id;
      this.emit("task-id", this.taskId);
    }
    if (event.event !== "token_delta") {
      if (event.id !== null && this.events.some((e) => e.id === event.id)) return; // a resumed stream
      this.events.push(event);
    }
    this.emit("event", event);
  },
};

// --- reading events ------------------------------------------------------------------------

const AGENT_IN_DESCRIPTION = /\bagent ([A-Za-z0-9_.@-]+)/;

function message(event) {
  return event.data?.extra_data?.full_message?.message ?? null;
}

/** The agent an event is about (its sender for a message), or "" when none is named. */
export function agentOf(event) {
  const data = event.data || {};
  if (data.agent) return data.agent;
  const m = message(event);
  if (m) return m.sender?.address ?? "";
  const found = typeof data.description === "string" && data.description.match(AGENT_IN_DESCRIPTION);
  return found ? found[1] : "";
}

/** For a delivered message: [sender, recipients[]] (addresses as written), else null. */
export function hopOf(event) {
  const m = message(event);
  if (!m) return null;
  const to = m.recipient ? [m.recipient] : (m.recipients || []);
  return [m.sender?.address ?? "", to.map((r) => r.address)];
}

/** The agent working after this event, or null when the event does not tell. */
export function workingAgent(event, agentNames) {
  if (event.event === "new_message") {
    const hop = hopOf(event);
    const target = hop && hop[1].find((name) => agentNames.has(name));
    return target ?? null;
  }
  const agent = agentOf(event);
  return agentNames.has(agent) ? agent : null;
}

/** The pending calls of a breakpoint pause: [{call_id, name, arguments}]. */
export function breakpointCalls(events, response) {
  for (let i = events.length - 1; i >= 0; i--) {
    const calls = events[i].event === "breakpoint_tool_call" && events[i].data?.extra_data?.calls;
    if (Array.isArray(calls) && calls.length) return calls;
  }
  try {
    const parsed = JSON.parse(response);
    if (Array.isArray(parsed)) return parsed.map((c) => ({ call_id: c.call_id, name: c.name, arguments: c.arguments }));
  } catch { /* not the JSON array of calls */ }
  return [];
}
