// Timeline: the current task as a waterfall (bars on a time axis, see waterfall.js) or as
// the list of its events in order, filterable by agent and by kind, each row expandable to
// its JSON. A row tells its time of day (the full date and time on hover) and how long
// until the next event of the task. The choice of view is kept in this browser.
import { clock, duration, h, time } from "../dom.js";
import { agentOf, store } from "../store.js";
import { instant, mountWaterfall } from "./waterfall.js";

const MODE_ITEM = "mail.timelineMode";

const GROUPS = {
  message: ["new_message", "broadcast_ignored", "await_message"],
  tool: ["tool_call", "builtin_tool_call", "help_called", "task_complete_call", "task_complete_call_duplicate"],
  action: ["action_call", "action_complete", "action_error"],
  breakpoint: ["breakpoint_tool_call", "breakpoint_action_complete"],
  interswarm: ["interswarm_message_sent", "interswarm_message_received", "interswarm_message_error"],
  error: ["agent_error", "task_error", "storage_error", "task_interrupted", "action_error", "interswarm_message_error"],
  end: ["task_complete", "task_error"],
};

function summary(event) {
  const d = event.data || {};
  const x = d.extra_data || {};
  const m = x.full_message?.message;
  if (m) {
    const to = m.recipient ? m.recipient.address : (m.recipients || []).map((r) => r.address).join(", ");
    return `${m.sender?.address} → ${to}: ${m.subject ?? ""} — ${m.body ?? ""}`;
  }
  if (x.tool_name) {
    const args = x.tool_args !== undefined ? JSON.stringify(x.tool_args) : "";
    const tail = x.content !== undefined ? ` ⇒ ${typeof x.content === "string" ? x.content : JSON.stringify(x.content)}` : (x.error ? ` ⇒ error: ${x.error}` : "");
    return `${x.tool_name}(${args})${tail}`;
  }
  if (x.reasoning) return `reasoning: ${x.reasoning}`;
  if (d.response !== undefined) return `${d.status ? `[${d.status}] ` : ""}${d.response}`;
  return d.description ?? "";
}

export function mountTimeline(root, { onPick } = {}) {
  const agentFilter = h("select", { id: "filter-agent", name: "agent" }, h("option", { value: "" }, "all agents"));
  const kindFilter = h("select", { id: "filter-kind", name: "kind" }, h("option", { value: "" }, "all kinds"),
    Object.keys(GROUPS).map((g) => h("option", { value: `group:${g}` }, `${g}s`)));
  const title = h("span", { id: "timeline-task", class: "muted" });
  const list = h("ol", { id: "timeline", class: "timeline" });
  const empty = h("p", { class: "muted", id: "timeline-empty" }, "No events yet: send a message, or open a task from the history.");
  const modes = {
    waterfall: h("button", { type: "button", id: "timeline-mode-waterfall", class: "ghost" }, "Waterfall"),
    list: h("button", { type: "button", id: "timeline-mode-list", class: "ghost" }, "List"),
  };
  const filters = h("span", { class: "filters" },
    h("label", { for: "filter-agent" }, "Agent"), agentFilter,
    h("label", { for: "filter-kind" }, "Kind"), kindFilter);
  const wrap = h("div", { class: "waterfall-wrap panel" });
  root.append(h("div", { class: "toolbar" },
    h("span", { class: "segmented", role: "group", "aria-label": "Show the task as" }, modes.waterfall, modes.list),
    filters, title), empty, wrap, list);
  const waterfall = mountWaterfall(wrap, { onPick });

  let mode = localStorage.getItem(MODE_ITEM) === "list" ? "list" : "waterfall";
  let drawPending = false;
  // while the task runs, what is going on grows with the server's clock: this browser's
  // time less the least delay seen between an event's time and its arrival
  let lag = Infinity;
  const live = () => (store.running && Number.isFinite(lag)
    ? { now: Date.now() - lag, names: new Set(store.agents?.agents.map((a) => a.name)) }
    : {});
  const draw = () => waterfall.render(events, live());
  const redraw = () => {
    if (mode !== "waterfall" || drawPending) return;
    drawPending = true;
    requestAnimationFrame(() => { drawPending = false; draw(); });
  };
  setInterval(() => { if (store.running && !wrap.hidden && !root.hidden) redraw(); }, 1000);
  function setMode(next) {
    mode = next;
    localStorage.setItem(MODE_ITEM, next);
    for (const [name, button] of Object.entries(modes)) button.setAttribute("aria-pressed", String(name === next));
    list.hidden = next !== "list";
    filters.hidden = next !== "list";
    wrap.hidden = next !== "waterfall" || !events.length;
    if (next === "waterfall") draw();
  }
  modes.waterfall.addEventListener("click", () => setMode("waterfall"));
  modes.list.addEventListener("click", () => setMode("list"));

  const kinds = new Set();
  const agents = new Set();

  const matches = (event) => {
    const agent = agentFilter.value;
    const kind = kindFilter.value;
    if (agent && agentOf(event) !== agent) return false;
    if (kind.startsWith("group:")) return GROUPS[kind.slice(6)].includes(event.event);
    return !kind || event.event === kind;
  };

  function row(event, index) {
    const agent = agentOf(event);
    const stamp = event.data?.timestamp;
    // the closing event has no id of its own: it stands for the stored event numbered data.seq
    const seq = event.id ?? event.data?.seq ?? "";
    const details = h("details", { class: "event" },
      h("summary", {},
        h("span", { class: "seq" }, seq),
        h("span", { class: `kind k-${event.event}` }, event.event),
        h("span", { class: "agent" }, agent || "—"),
        h("span", { class: "time muted", title: stamp ? `${time(stamp)} (${stamp})` : null }, stamp ? clock(stamp) : ""),
        h("span", { class: "took muted", title: "until the next event" }, ""),
        h("span", { class: "text" }, summary(event))),
      h("pre", { class: "json" }, JSON.stringify(event, null, 2)));
    const li = h("li", { dataset: { kind: event.event, agent, index: String(index) } }, details);
    li.hidden = !matches(event);
    return li;
  }

  function addOptions(event) {
    const agent = agentOf(event);
    if (agent && !agents.has(agent)) { agents.add(agent); agentFilter.append(h("option", { value: agent }, agent)); }
    if (!kinds.has(event.event)) { kinds.add(event.event); kindFilter.append(h("option", { value: event.event }, event.event)); }
  }

  const events = []; // aligned with the rows of the list

  function append(event) {
    const previous = events[events.length - 1];
    if (store.running) lag = Math.min(lag, Date.now() - instant(event.data?.timestamp));
    events.push(event);
    addOptions(event);
    if (previous) {
      const took = Date.parse(event.data?.timestamp) - Date.parse(previous.data?.timestamp);
      list.lastElementChild.querySelector(".took").textContent = duration(took);
    }
    list.append(row(event, events.length - 1));
    empty.hidden = true;
    wrap.hidden = mode !== "waterfall";
    redraw();
  }

  function reset() {
    events.length = 0;
    list.replaceChildren();
    empty.hidden = false;
    wrap.hidden = true;
    waterfall.render([]);
    lag = Infinity;
    title.textContent = store.taskId ? `task ${store.taskId}` : "";
    for (const event of store.events) append(event);
  }

  const refilter = () => [...list.children].forEach((li, i) => { li.hidden = !matches(events[i]); });
  agentFilter.addEventListener("change", refilter);
  kindFilter.addEventListener("change", refilter);

  store.on((kind, payload) => {
    if (kind === "task") reset();
    else if (kind === "task-id") title.textContent = `task ${payload}`;
    else if (kind === "event" && payload.event !== "token_delta") append(payload);
    else if (kind === "running" && !payload) redraw(); // what was open is closed or cut
  });
  reset();
  setMode(mode);
}
