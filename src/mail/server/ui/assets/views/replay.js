// Replay: step through the current task's events (previous, next, a slider, play/pause),
// the graph marking the agent that holds the turn and the edge a message takes at the
// step; a running task is followed live until a control moves the step back. A node of
// the graph opens the agent's panel: what it is, its prompt (for admins), its actions,
// and its history up to the step (the messages it got and sent, the tools it called).
import { clock, h } from "../dom.js";
import { hopOf, store, workingAgent } from "../store.js";

const PLAY_MS = 700;

/** The agent holding the turn at step `index`: the last agent an event up to it names. */
export function turnHolder(events, index, names) {
  for (let i = index; i >= 0; i--) {
    const agent = workingAgent(events[i], names);
    if (agent) return agent;
  }
  return null;
}

function what(event) {
  const x = event.data?.extra_data || {};
  const m = x.full_message?.message;
  if (m) {
    const to = m.recipient ? m.recipient.address : (m.recipients || []).map((r) => r.address).join(", ");
    return `${m.sender?.address} → ${to}: ${m.subject ?? ""}`;
  }
  if (x.tool_name) return `${event.event} ${x.tool_name}`;
  if (event.data?.status) return `${event.event} [${event.data.status}]`;
  return event.event;
}

/** What `agent` got, sent and called in events[0..index]: [{seq, dir (in, out, call), text}]. */
export function historyAt(events, index, agent) {
  const out = [];
  for (const event of events.slice(0, index + 1)) {
    const seq = event.id ?? event.data?.seq ?? "";
    const x = event.data?.extra_data || {};
    const hop = event.event === "new_message" && hopOf(event);
    const m = x.full_message?.message;
    if (hop && hop[0] === agent) {
      out.push({ seq, dir: "out", text: `to ${hop[1].join(", ")}: ${m.subject ?? ""} — ${m.body ?? ""}` });
    } else if (hop && (hop[1].includes(agent) || hop[1].includes("all"))) {
      out.push({ seq, dir: "in", text: `from ${hop[0]}: ${m.subject ?? ""} — ${m.body ?? ""}` });
    } else if (event.event === "tool_call" && event.data?.description?.startsWith(`agent ${agent} called `)) {
      out.push({ seq, dir: "call", text: `${x.tool_name}(${JSON.stringify(x.tool_args ?? {})})` });
    }
  }
  return out;
}

export function mountReplay(root, { graph }) {
  const prev = h("button", { type: "button", id: "replay-prev", class: "ghost", title: "Previous event" }, "◀ Prev");
  const play = h("button", { type: "button", id: "replay-play", title: "Play the task's events from this step" }, "Play");
  const next = h("button", { type: "button", id: "replay-next", class: "ghost", title: "Next event" }, "Next ▶");
  const slider = h("input", { type: "range", id: "replay-step", min: "0", max: "0", value: "0", "aria-label": "Step of the replay" });
  const caption = h("output", { id: "replay-caption", for: "replay-step", class: "muted" });
  const bar = h("div", { id: "replay", class: "replay toolbar", hidden: true, role: "group", "aria-label": "Replay" },
    h("strong", {}, "Replay"), prev, play, next, slider, caption);

  const panel = h("aside", { id: "agent-panel", class: "agent-panel panel", hidden: true, "aria-labelledby": "agent-panel-name", tabindex: "-1" });
  root.append(bar, panel);

  let index = -1;
  let follow = true; // at the last event, moving on with each new one
  let timer = null;
  let selected = null; // the agent whose panel is open

  const events = () => store.events;
  const names = () => graph.names();

  function show({ animate = false } = {}) {
    const list = events();
    bar.hidden = !list.length;
    slider.max = String(Math.max(list.length - 1, 0));
    slider.value = String(Math.max(index, 0));
    prev.disabled = index <= 0;
    next.disabled = index >= list.length - 1;
    if (index < 0 || !list.length) { graph.step(null, null); caption.textContent = ""; renderPanel(); return; }
    const event = list[index];
    const agent = turnHolder(list, index, names());
    const hop = event.event === "new_message" ? hopOf(event) : null;
    graph.step(agent, hop, { animate });
    const stamp = event.data?.timestamp;
    caption.textContent = `step ${index + 1}/${list.length}${follow && store.running ? " (live)" : ""} · ${stamp ? clock(stamp) : ""} · ${what(event)}${agent ? ` · turn: ${agent}` : ""}`;
    caption.title = stamp ?? "";
    caption.dataset.agent = agent ?? "";
    renderPanel();
  }

  function goTo(i, { animate = true } = {}) {
    const list = events();
    if (!list.length) return;
    index = Math.min(Math.max(i, 0), list.length - 1);
    follow = index === list.length - 1;
    show({ animate });
  }

  function stop() {
    if (timer) clearInterval(timer);
    timer = null;
    play.textContent = "Play";
    play.setAttribute("aria-pressed", "false");
  }

  function start() {
    if (index >= events().length - 1) goTo(0);
    play.textContent = "Pause";
    play.setAttribute("aria-pressed", "true");
    timer = setInterval(() => {
      if (index >= events().length - 1) { stop(); return; }
      goTo(index + 1);
    }, PLAY_MS);
  }

  prev.addEventListener("click", () => { stop(); goTo(index - 1); });
  next.addEventListener("click", () => { stop(); goTo(index + 1); });
  play.addEventListener("click", () => (timer ? stop() : start()));
  slider.addEventListener("input", () => { stop(); goTo(Number(slider.value), { animate: false }); });

  // --- the agent's panel ---------------------------------------------------------------
  function renderPanel() {
    if (!selected) { panel.hidden = true; return; }
    const agent = store.agents?.agents.find((a) => a.name === selected);
    const close = h("button", { type: "button", id: "agent-panel-close", class: "ghost", onclick: () => select(null) }, "Close");
    const facts = [];
    if (!agent) facts.push("A remote agent (agent@swarm): this server knows only its address.");
    else {
      if (agent.name === store.agents.entrypoint) facts.push("The swarm's entrypoint: it gets the user's messages.");
      if (agent.can_complete_tasks) facts.push("It can complete tasks (answer the user).");
      if (agent.enable_interswarm) facts.push("It can message other swarms.");
      facts.push(agent.comm_targets.length ? `It can message: ${agent.comm_targets.join(", ")}.` : "It messages no other agent.");
    }
    const admin = store.me?.role === "admin";
    const prompt = agent?.prompt
      ? h("pre", { id: "agent-prompt", class: "prompt" }, agent.prompt)
      : h("p", { id: "agent-prompt", class: "muted" }, admin ? "No prompt as text (a scripted agent, or a prompt built by its factory)." : "Its prompt is shown to admins only.");
    const actions = agent?.actions?.length
      ? h("ul", { id: "agent-actions" }, agent.actions.map((a) => h("li", {}, h("code", {}, a.name), ` — ${a.description}`)))
      : h("p", { id: "agent-actions", class: "muted" }, "No actions: it uses the MAIL tools only (send_request, send_response, …).");
    const list = events();
    const history = index >= 0 ? historyAt(list, index, selected) : [];
    const historyEl = history.length
      ? h("ol", { id: "agent-history", class: "agent-history" }, history.map((item) =>
        h("li", { class: `h-${item.dir}`, dataset: { seq: String(item.seq), dir: item.dir } },
          h("span", { class: "seq" }, item.seq),
          h("span", { class: "dir" }, { in: "got", out: "sent", call: "called" }[item.dir]),
          h("span", { class: "text" }, item.text))))
      : h("p", { id: "agent-history", class: "muted" }, index >= 0 ? "Nothing yet at this step." : "No task open: send a message or open a task from the history.");
    panel.replaceChildren(
      h("div", { class: "panel-head" }, h("h2", { id: "agent-panel-name" }, selected), close),
      h("ul", { class: "facts" }, facts.map((f) => h("li", {}, f))),
      h("h3", {}, "Prompt"), prompt,
      h("h3", {}, "Actions"), actions,
      h("h3", {}, index >= 0 ? `History up to step ${index + 1}` : "History"), historyEl);
    panel.hidden = false;
  }

  function select(name) {
    selected = name;
    renderPanel();
    if (name) panel.focus();
  }

  store.on((kind, payload) => {
    if (kind === "task") { stop(); index = -1; follow = true; show(); }
    else if (kind === "event" && payload.event !== "token_delta") {
      if (follow) index = events().length - 1;
      show();
    } else if (kind === "running") show();
  });

  return { goTo, select };
}
