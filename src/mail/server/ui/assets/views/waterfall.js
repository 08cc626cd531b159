// Waterfall: a task's events as bars on a time axis, one row per agent: each agent turn,
// the model call(s) inside it, each action and each interswarm wait, with the tokens of
// every model call and of the task. Derived from the stored events alone: the first
// tool_call of a turn tells when the turn began (turn_started) and its model calls.
import { clock, duration, h, time } from "../dom.js";
import { agentOf } from "../store.js";

/** Milliseconds since the epoch of an ISO timestamp, keeping its microseconds (Date.parse
 * drops them: the offline swarm's turns are microseconds apart). */
export function instant(iso) {
  const ms = Date.parse(iso);
  const frac = typeof iso === "string" && iso.match(/T[\d:]+\.(\d+)/);
  if (!frac || !Number.isFinite(ms)) return ms;
  const exact = Number(frac[1].padEnd(6, "0").slice(0, 6)) / 1000;
  return ms - (ms % 1000 + 1000) % 1000 + exact;
}
const at = (event) => instant(event?.data?.timestamp);
const FORWARD = /^sent interswarm message forward to swarm (\S+?):?\s/;
const FROM = /from swarm (\S+)/;
const USAGE = [["input_tokens", "in"], ["output_tokens", "out"], ["reasoning_tokens", "reasoning"], ["cached_input_tokens", "cached"]];

/** "12 in · 5 out" for a usage object, or "" when it counts nothing. */
export function tokens(usage) {
  if (!usage) return "";
  return USAGE.filter(([key]) => usage[key]).map(([key, name]) => `${usage[key]} ${name}`).join(" · ");
}

/**
 * The bars of a task: {start, end, agents[], bars[], usage}. Each bar is {kind (turn, model,
 * action, interswarm), agent, start, end (ms since the epoch), label, usage?, seq, status?,
 * open?}. For a running task, `now` (the server's time) ends what is still going on: an
 * action not complete, a wait not answered, and the turn of an agent (one of `names`) that
 * got a message and has called no tool since (its bar starts at the message).
 */
export function bars(events, { now = null, names = new Set() } = {}) {
  const times = events.map(at).filter(Number.isFinite);
  const out = { start: Math.min(...times), end: Math.max(...times), agents: [], bars: [], usage: null };
  if (!times.length) return { ...out, start: 0, end: 0 };
  const seen = new Set();
  const agent = (name) => { if (name && !seen.has(name)) { seen.add(name); out.agents.push(name); } };
  const turns = [];
  const actions = new Map(); // tool_call_id -> bar
  let sent = []; // interswarm waits not answered yet
  const total = Object.fromEntries(USAGE.map(([key]) => [key, 0]));
  let counted = false;
  const pending = new Map(); // agent -> [time, index] of a message it got, no turn seen since

  events.forEach((event, index) => {
    const x = event.data?.extra_data || {};
    const t = at(event);
    const done = (event.event === "action_complete" || event.event === "action_error") && actions.get(x.tool_call_id);
    const who = done ? done.agent : agentOf(event);
    const seq = event.id ?? event.data?.seq ?? null;
    if (event.event === "new_message") {
      const m = x.full_message?.message;
      const to = m ? (m.recipient ? [m.recipient] : (m.recipients || [])) : [];
      for (const r of to) if (names.has(r.address) && !pending.has(r.address)) pending.set(r.address, [t, index]);
    }
    if (event.event === "tool_call" && x.turn_started) {
      pending.delete(who);
      agent(who);
      const start = instant(x.turn_started);
      const turn = { kind: "turn", agent: who, start, end: t, label: `turn of ${who}`, seq, index, usage: null };
      turns.push(turn);
      out.bars.push(turn);
      const calls = Array.isArray(x.model_calls) ? x.model_calls : [];
      let from = start;
      for (const call of calls) {
        const end = instant(call.timestamp);
        out.bars.push({ kind: "model", agent: who, start: from, end, label: call.model ? `model call (${call.model})` : "model call", usage: call.usage, seq, index });
        for (const [key] of USAGE) if (Number.isInteger(call.usage?.[key])) { total[key] += call.usage[key]; counted = true; }
        from = end;
      }
      if (!calls.length) out.bars.push({ kind: "model", agent: who, start, end: t, label: "agent call (no model usage reported)", seq, index });
      turn.usage = calls.length ? sumUsage(calls.map((c) => c.usage)) : null;
    } else if (event.event === "action_call") {
      const bar = { kind: "action", agent: who, start: t, end: t, label: `action ${x.tool_name ?? ""}`, seq, index };
      actions.set(x.tool_call_id, bar);
      out.bars.push(bar);
    } else if (event.event === "action_complete" || event.event === "action_error") {
      const bar = actions.get(x.tool_call_id);
      if (bar) { bar.end = t; bar.status = event.event === "action_error" ? "error" : (x.status ?? "success"); }
    } else if (event.event === "interswarm_message_sent" && FORWARD.test(event.data?.description ?? "")) {
      // a request to another swarm: its sender (the agent whose turn it is) waits for the reply
      const swarm = event.data.description.match(FORWARD)[1];
      const holder = turns.at(-1)?.agent || "interswarm";
      const bar = { kind: "interswarm", agent: holder, swarm, start: t, end: t, label: `waiting on swarm ${swarm}`, seq, index };
      agent(holder);
      sent.push(bar);
      out.bars.push(bar);
    } else if (event.event === "interswarm_message_received" || event.event === "interswarm_message_error") {
      const from = (event.data?.description ?? "").match(FROM);
      const i = Math.max(0, sent.findIndex((b) => from && b.swarm === from[1]));
      const [bar] = sent.splice(i, 1);
      if (bar) { bar.end = t; bar.status = event.event.endsWith("error") ? "error" : "answered"; }
    }
    // a turn lasts until the last event of its agent before the agent's next turn
    if (who) {
      const turn = turns.findLast((r) => r.agent === who);
      if (turn && t > turn.end && !(event.event === "tool_call" && x.turn_started)) turn.end = t;
    }
  });
  if (Number.isFinite(now) && now > out.end) {
    out.end = now;
    for (const bar of [...sent, ...actions.values()]) if (bar.end === bar.start && !bar.status) bar.open = true;
    for (const [name, [start, index]] of pending) {
      agent(name);
      out.bars.push({ kind: "turn", agent: name, start, end: now, label: `${name} working (no tool call yet)`, index, open: true });
    }
    for (const bar of out.bars) if (bar.open) bar.end = now;
  }
  for (const bar of sent) bar.end = out.end; // still waiting when the events end
  out.usage = counted ? total : null;
  const closing = events.findLast((e) => e.data?.usage);
  if (closing) out.usage = closing.data.usage;
  return out;
}

function sumUsage(list) {
  const total = {};
  for (const usage of list) for (const [key] of USAGE) if (Number.isInteger(usage?.[key])) total[key] = (total[key] ?? 0) + usage[key];
  return total;
}

/** The waterfall's element; render(events) redraws it; onPick(index) gets a clicked bar's event. */
export function mountWaterfall(root, { onPick } = {}) {
  const head = h("p", { id: "waterfall-summary", class: "muted" });
  const chart = h("div", { id: "waterfall", class: "waterfall", role: "list", "aria-label": "The task's turns, model calls and actions on a time axis" });
  root.append(head, chart);

  function render(events, live = {}) {
    const w = bars(events, live);
    chart.replaceChildren();
    if (!w.bars.length) {
      head.textContent = events.length ? "No agent turn recorded yet." : "";
      return;
    }
    const span = Math.max(w.end - w.start, 1);
    const pct = (t) => `${((t - w.start) / span) * 100}%`;
    const usage = tokens(w.usage);
    const turns = w.bars.filter((b) => b.kind === "turn").length;
    const going = w.bars.some((b) => b.open) ? " so far" : "";
    head.textContent = `${turns} agent turn${turns === 1 ? "" : "s"} in ${duration(w.end - w.start)}${going}${usage ? ` · tokens: ${usage}` : ""}`;
    head.title = `${time(new Date(w.start).toISOString())} → ${time(new Date(w.end).toISOString())}`;

    const axis = h("div", { class: "wf-axis", "aria-hidden": "true" }, h("span", { class: "wf-name" }));
    const ticks = h("div", { class: "wf-track" });
    for (const f of [0, 0.25, 0.5, 0.75, 1]) {
      const tick = h("span", { class: "wf-tick" }, duration(span * f));
      tick.style.left = `${f * 100}%`;
      ticks.append(tick);
    }
    axis.append(ticks);
    chart.append(axis);

    for (const name of w.agents) {
      const track = h("div", { class: "wf-track" });
      for (const bar of w.bars.filter((b) => b.agent === name)) {
        const took = bar.end - bar.start;
        const tip = [
          `${bar.label}: ${duration(took)}`,
          `from ${time(new Date(bar.start).toISOString())} (${clock(new Date(bar.start).toISOString())})`,
          `to ${time(new Date(bar.end).toISOString())} (${clock(new Date(bar.end).toISOString())})`,
          bar.usage && tokens(bar.usage) ? `tokens: ${tokens(bar.usage)}` : "",
          bar.status ? `status: ${bar.status}` : "",
        ].filter(Boolean).join("\n");
        const el = h("button", {
          type: "button",
          class: `wf-bar wf-${bar.kind}${bar.status === "error" ? " wf-error" : ""}${bar.open ? " wf-open" : ""}`,
          title: tip,
          "aria-label": `${name}: ${bar.label}, ${duration(took)}`,
          dataset: { kind: bar.kind, agent: name, start: String(bar.start - w.start), duration: String(took), index: String(bar.index), ...(bar.open ? { open: "true" } : {}) },
          onclick: () => onPick?.(bar.index),
        }, bar.kind === "model" && bar.usage ? tokens(bar.usage) : "");
        el.style.left = pct(bar.start);
        el.style.width = `max(3px, ${(took / span) * 100}%)`;
        track.append(el);
      }
      chart.append(h("div", { class: "wf-row", role: "listitem", dataset: { agent: name } },
        h("span", { class: "wf-name", title: name }, name), track));
    }
    chart.append(h("ul", { class: "legend wf-legend" },
      h("li", {}, h("span", { class: "swatch wf-turn" }), "agent turn"),
      h("li", {}, h("span", { class: "swatch wf-model" }), "model call (tokens)"),
      h("li", {}, h("span", { class: "swatch wf-action" }), "action"),
      h("li", {}, h("span", { class: "swatch wf-interswarm" }), "interswarm wait")));
  }

  return { render, element: chart };
}
