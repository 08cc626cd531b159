// The steps of one answer, read from the task's events as they arrive: the messages the
// agents sent each other, the tools and actions they called (arguments, then the result),
// the reasoning a model gave, the waits, and errors and breakpoints. Each step is a list
// item; one with more to show is a <details> (collapsed; Enter or Space opens it).
import { clock, h } from "../dom.js";
import { agentOf } from "../store.js";

/** Tools whose call shows up as the message it sends (or, for task_complete, the answer). */
const MESSAGE_TOOLS = new Set([
  "send_request", "send_response", "send_broadcast", "send_interrupt", "task_complete",
  "send_task_complete",
]);
const ERROR_EVENTS = new Set([
  "agent_error", "task_error", "action_error", "run_loop_error", "storage_error",
  "interswarm_message_error",
]);
const NOTICE = /^::[a-z_]+::$/;
const QUIET_NOTICES = new Set(["::action_complete::", "::task_complete::", "::breakpoint_action_complete::"]);

const fullMessage = (event) => event.data?.extra_data?.full_message ?? null;
const extra = (event) => event.data?.extra_data ?? {};

/** The text of a value to show: strings as they are, the rest as indented JSON. */
export function shown(value) {
  if (typeof value === "string") {
    try { return JSON.stringify(JSON.parse(value), null, 2); } catch { return value; }
  }
  try { return JSON.stringify(value, null, 2); } catch { return String(value); }
}

/** A call's arguments on one line, cut: `location="Tokyo", days_ahead=0`. */
function argsLine(args, limit = 80) {
  if (!args || typeof args !== "object") return "";
  const text = Object.entries(args).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ");
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

/** The start of a text on one line. */
const gist = (text, limit = 90) => {
  const line = String(text).replace(/\s+/g, " ").trim();
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
};

/** Whether a delivered message is a person's (the start of a turn of the conversation). */
export function isUserMessage(event) {
  const m = event.event === "new_message" && fullMessage(event)?.message;
  return Boolean(m) && ["user", "admin"].includes(m.sender?.address_type);
}

/** The final answer a message carries (a ::task_complete:: broadcast), or null. */
export function answerOf(event) {
  const m = event.event === "new_message" && fullMessage(event)?.message;
  return m && m.subject === "::task_complete::" ? { agent: m.sender?.address ?? "", body: m.body ?? "" } : null;
}

export class Steps {
  /** Steps drawn into the list `ol`; onChange() runs after each new step. */
  constructor(ol, onChange = () => {}) {
    this.ol = ol;
    this.onChange = onChange;
    this.count = 0;
    this.agents = new Set();
    this.calls = new Map(); // tool_call_id -> the call's step (its result is added later)
    this.thinking = new Map(); // agent -> the live reasoning item while its model streams
    this.answeredBy = ""; // the agent that called task_complete
    this.first = null; // the first and last event timestamps (ISO)
    this.last = null;
  }

  /** Read one stored event of the turn. */
  add(event) {
    const data = event.data || {};
    if (typeof data.timestamp === "string") {
      this.first ??= data.timestamp;
      this.last = data.timestamp;
    }
    switch (event.event) {
      case "new_message": return this.message(event);
      case "tool_call": return this.toolCall(event);
      case "action_complete": return this.result(event, false);
      case "action_error": return this.result(event, true);
      case "breakpoint_tool_call": return this.breakpoint(event);
      case "interswarm_message_sent":
      case "interswarm_message_received":
        return this.step("remote", agentOf(event), data.description ?? event.event, null, event);
      default:
        if (ERROR_EVENTS.has(event.event)) {
          return this.step("error", agentOf(event), `${event.event.replace(/_/g, " ")}`, data.description ?? "", event);
        }
        return null;
    }
  }

  /** A live piece of an agent's reasoning or text (token_delta), until its call arrives. */
  delta(agent, kind, text) {
    if (!agent || !text) return;
    let item = this.thinking.get(agent);
    if (!item) {
      const body = h("pre", { class: "step-text" });
      item = h("li", { class: "step reasoning live", "data-agent": agent },
        h("div", { class: "step-line" }, h("strong", { class: "step-agent" }, agent),
          h("span", {}, kind === "reasoning" ? " is thinking…" : " is writing…")), body);
      item.body = body;
      this.thinking.set(agent, item);
      this.ol.append(item);
    }
    item.body.textContent += text;
  }

  message(event) {
    const m = fullMessage(event)?.message;
    if (!m || ["user", "admin"].includes(m.sender?.address_type)) return null;
    const to = (m.recipient ? [m.recipient] : (m.recipients ?? [])).map((r) => r.address);
    if (m.sender?.address_type === "system") {
      if (!NOTICE.test(m.subject ?? "") || QUIET_NOTICES.has(m.subject)) return null;
      const kind = /error|invalid|improper/.test(m.subject) ? "error" : "notice";
      return this.step(kind, to.join(", "), `${m.subject} to ${to.join(", ")}`, m.body ?? "", event);
    }
    if (m.subject === "::task_complete::") return null; // the answer itself
    const sender = m.sender?.address ?? "";
    const type = fullMessage(event)?.msg_type ?? "";
    const title = h("span", { class: "step-title" }, h("span", { class: "arrow" }, ` → ${to.join(", ")}`),
      type ? h("span", { class: "tag" }, type) : null, h("span", { class: "subject" }, m.subject ?? ""));
    return this.step("message", sender, title, m.body ?? "", event);
  }

  toolCall(event) {
    const x = extra(event);
    const agent = agentOf(event);
    this.settle(agent);
    if (x.reasoning) this.step("reasoning", agent, h("span", { class: "gist" }, `thinks: ${gist(x.reasoning)}`), x.reasoning, event);
    if (x.preamble) this.step("reasoning", agent, h("span", { class: "gist" }, `writes: ${gist(x.preamble)}`), x.preamble, event);
    if (x.tool_name === "task_complete") this.answeredBy = agent;
    if (MESSAGE_TOOLS.has(x.tool_name)) return null;
    if (x.tool_name === "await_message") {
      return this.step("wait", agent, `waits for a message${x.tool_args?.reason ? `: ${x.tool_args.reason}` : ""}`, null, event);
    }
    const detail = h("div", {}, h("div", { class: "step-label" }, "arguments"), h("pre", { class: "args" }, shown(x.tool_args ?? {})));
    const item = this.step("call", agent,
      h("span", { class: "step-title" }, "calls ", h("code", {}, x.tool_name ?? "?"), h("span", { class: "muted args-line" }, `(${argsLine(x.tool_args)})`)),
      detail, event);
    if (x.tool_call_id) this.calls.set(x.tool_call_id, item);
    return item;
  }

  result(event, failed) {
    const x = extra(event);
    const call = x.tool_call_id && this.calls.get(x.tool_call_id);
    const content = x.content ?? x.error ?? event.data?.description ?? "";
    if (!call) return this.step(failed ? "error" : "call", agentOf(event), failed ? "action error" : `${x.tool_name ?? "action"} returned`, content, event);
    const failedHere = failed || (x.status && x.status !== "success");
    call.classList.toggle("failed", Boolean(failedHere));
    call.querySelector(".step-body").append(
      h("div", { class: "step-label" }, failedHere ? "error" : "result"), h("pre", { class: "result" }, shown(content)));
    call.querySelector(".step-status").textContent = failedHere ? "failed" : "done";
    return call;
  }

  breakpoint(event) {
    const calls = extra(event).calls ?? [];
    const names = calls.map((c) => c.name).join(", ");
    return this.step("breakpoint", agentOf(event), `breakpoint: waits for the result of ${names || "its calls"}`,
      calls.map((c) => `${c.name} ${shown(c.arguments)}`).join("\n\n"), event);
  }

  /** The agent's model has answered: its live reasoning item goes. */
  settle(agent) {
    this.thinking.get(agent)?.remove();
    this.thinking.delete(agent);
  }

  /** Append a step: kind (message, call, reasoning, wait, error, notice, breakpoint, remote). */
  step(kind, agent, title, detail, event) {
    const time = event?.data?.timestamp;
    const line = [
      h("strong", { class: "step-agent" }, agent || "swarm"), " ",
      typeof title === "string" ? h("span", {}, title) : title,
      kind === "call" ? h("span", { class: "step-status muted" }, "running") : null,
      time ? h("time", { class: "muted step-time", datetime: time, title: time }, clock(time)) : null,
    ];
    const body = detail === null || detail === undefined || detail === ""
      ? null
      : h("div", { class: "step-body" }, typeof detail === "string" ? h("pre", { class: "step-text" }, detail) : detail);
    const item = body
      ? h("li", { class: `step ${kind}` }, h("details", {}, h("summary", {}, ...line), body))
      : h("li", { class: `step ${kind}` }, h("div", { class: "step-line" }, ...line));
    if (kind === "call" && !body) item.append(h("div", { class: "step-body" }));
    if (event?.id) item.dataset.event = event.id;
    if (agent) this.agents.add(agent);
    const live = this.thinking.size ? this.ol.querySelector(".step.live") : null;
    this.ol.insertBefore(item, live); // live reasoning stays last
    this.count += 1;
    this.onChange();
    return item;
  }
}
