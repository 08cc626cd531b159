// The activity line under the chat: while a task runs, which agent works, what it is
// doing (the tool or action it calls, the message it reads, the swarm it waits on) and
// how long the task has been running. Read from the task's events as they arrive.
import { h } from "../dom.js";
import { agentOf, store, workingAgent } from "../store.js";

const ACTION = /executing action tool: (\S+)/;
const CALLER = /\(caller = ([^)]+)\)/;

/** What an event says the swarm is doing now: {agent, doing}, or null when it does not tell. */
export function activityOf(event, agentNames) {
  const d = event.data || {};
  const x = d.extra_data || {};
  const description = typeof d.description === "string" ? d.description : "";
  const agent = agentOf(event);
  switch (event.event) {
    case "new_message": {
      const to = workingAgent(event, agentNames);
      return to ? { agent: to, doing: `thinking (a message from ${agent || "someone"})` } : null;
    }
    case "tool_call": {
      const target = x.tool_args?.target;
      return { agent, doing: `calling ${x.tool_name}${typeof target === "string" ? ` → ${target}` : ""}` };
    }
    case "action_call":
      return { agent, doing: `running the action ${description.match(ACTION)?.[1] ?? ""}`.trim() };
    case "action_complete":
      return { agent: description.match(CALLER)?.[1] ?? agent, doing: "reading the action's result" };
    case "await_message":
      return { agent, doing: "waiting for a message" };
    case "token_delta":
      return d.agent ? { agent: d.agent, doing: d.kind === "reasoning" ? "reasoning" : "writing" } : null;
    case "interswarm_message_sent":
      return { agent, doing: "waiting on another swarm" };
    default:
      return null;
  }
}

const seconds = (ms) => (ms < 60_000 ? `${Math.floor(ms / 1000)} s` : `${Math.floor(ms / 60_000)} min ${Math.floor((ms % 60_000) / 1000)} s`);

export function mountActivity(root) {
  const who = h("strong", { class: "act-who" });
  const what = h("span", { class: "act-what" });
  const elapsed = h("span", { class: "act-elapsed muted", title: "since the message was sent" });
  const line = h("p", { id: "activity", class: "activity", role: "status", hidden: true },
    h("span", { class: "dot", "aria-hidden": "true" }), who, what, elapsed);
  root.append(line);

  let started = 0;
  let timer = null;
  const names = () => new Set((store.agents?.agents ?? []).map((a) => a.name));
  const tick = () => { elapsed.textContent = seconds(Date.now() - started); };

  function start() {
    started = Date.now();
    who.textContent = "";
    what.textContent = "sending…";
    tick();
    timer = setInterval(tick, 1000);
    line.hidden = false;
  }
  function stop() {
    clearInterval(timer);
    timer = null;
    line.hidden = true;
  }

  store.on((kind, payload) => {
    if (kind === "running") (payload ? start : stop)();
    else if (kind === "event" && store.running) {
      const now = activityOf(payload, names());
      if (now && now.agent) {
        who.textContent = now.agent;
        what.textContent = now.doing;
      }
    }
  });
  return line;
}
