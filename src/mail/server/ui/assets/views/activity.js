// The activity line under the chat: while a task runs, which agent works, what it is
// doing (the tool or action it calls, the message it reads, the swarm it waits on) and
// how long the task has been running. Read from the task's events as they arrive.
import { h } from "../dom.js";
import { agentOf, hopOf, store, workingAgent } from "../store.js";

const ACTION = /executing action tool: (\S+)/;
const CALLER = /\(caller = ([^)]+)\)/;
const AWAITING = /^agent '([^']+)' is awaiting/;

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
    case "await_message": // "agent 'supervisor' is awaiting a new message: ..."
      return { agent: agent || (description.match(AWAITING)?.[1] ?? ""), doing: "waiting for a message" };
    case "token_delta":
      return d.agent ? { agent: d.agent, doing: d.kind === "reasoning" ? "reasoning" : "writing" } : null;
    case "interswarm_message_sent":
      return { agent, doing: "waiting on another swarm" };
    default:
      return null;
  }
}

/** The peers an agent waits on: those it sent a request to that have not answered yet
 * (read from the task's events: requests out, responses back). */
export function awaitedPeers(events, agent) {
  const open = new Map();
  for (const event of events) {
    const type = event.data?.extra_data?.full_message?.msg_type;
    const hop = event.event === "new_message" && (type === "request" || type === "response") && hopOf(event);
    if (!hop) continue;
    const [sender, to] = hop;
    if (type === "request" && sender === agent) {
      for (const peer of to) open.set(peer, (open.get(peer) ?? 0) + 1);
    } else if (type === "response" && to.includes(agent) && open.get(sender)) {
      open.set(sender, open.get(sender) - 1);
    }
  }
  return [...open].filter(([, n]) => n > 0).map(([peer]) => peer);
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
      if (now && payload.event === "await_message") {
        const peers = awaitedPeers(store.events, now.agent);
        if (peers.length) now.doing = `waiting for ${peers.join(", ")}`;
      }
      if (now && now.agent) {
        who.textContent = now.agent;
        what.textContent = now.doing;
      }
    }
  });
  return line;
}
