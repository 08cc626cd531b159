// Agent graph: the swarm's agents and their comm_targets drawn as SVG; the entrypoint and
// the agents that can complete tasks are marked, remote agent@swarm targets drawn apart.
// While a task runs the working agent is highlighted and messages travel along the edges;
// step() marks the agent holding the turn and the message's edge at a replayed step.
// The drawing is sized to its box (one SVG unit per CSS pixel), so labels keep their size
// in a narrow window; long names wrap inside their node. A node opens the agent's panel.
import { h } from "../dom.js";
import { hopOf, store, workingAgent } from "../store.js";

const SVG = "http://www.w3.org/2000/svg";
const R_MIN = 42;
let R = R_MIN; // the nodes' radius: grows with the longest label
const LINE = 15; // px between label lines
const PER_LINE = 10; // characters of a label line
const MAX_LINES = 3;
const reducedMotion = () => matchMedia("(prefers-reduced-motion: reduce)").matches;

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

const CHAR = 7.5; // px: a generous width of a 13 px label character

/** The radius a node needs for its label rows (the widest row of `width` characters). */
const radiusFor = (rows, width) => Math.hypot((width * CHAR) / 2, (rows * LINE) / 2) + 6;

/**
 * Where each node goes in a box `W` wide, with nodes of radius `r`: on a ring when it fits
 * the width, else in rows (a narrow window, a large swarm). Returns {pos, H}.
 */
function layout(names, W, r) {
  const n = names.length;
  const pos = new Map();
  const gap = 10;
  const ring = n < 2 ? 0 : n === 2 ? r + gap : (r + gap / 2) / Math.sin(Math.PI / n);
  if (W / 2 >= ring + r + gap) {
    const H = Math.round(Math.max(2 * (ring + r + gap), Math.min(440, W * 0.7)));
    // as wide a ring as the box allows, never narrower than the nodes need
    const radius = Math.max(ring, Math.min(W, H) / 2 - r - 24);
    names.forEach((name, i) => {
      const angle = -Math.PI / 2 + (2 * Math.PI * i) / n;
      pos.set(name, { x: W / 2 + radius * Math.cos(angle), y: H / 2 + radius * Math.sin(angle) });
    });
    return { pos, H };
  }
  const cols = Math.max(1, Math.floor(W / (2 * r + 3 * gap)));
  const cell = W / cols;
  const row = 2 * r + 3 * gap;
  names.forEach((name, i) => {
    const c = i % cols;
    const k = Math.floor(i / cols);
    // odd rows shifted (as far as the box allows), so an edge between rows seldom crosses a node
    const shift = k % 2 && cols > 1 ? Math.min(cell / 4, Math.max(0, cell / 2 - r - 2)) : 0;
    pos.set(name, { x: cell * (c + 0.5) + shift, y: row * (k + 0.5) });
  });
  return { pos, H: Math.round(row * Math.ceil(n / cols)) };
}

/** A name cut into lines of at most PER_LINE characters, at "_", "-", "." or "@" when it can. */
export function labelLines(name) {
  const lines = [];
  let rest = name;
  while (rest.length > PER_LINE + 2) { // a word of up to 12 characters stays whole
    const head = rest.slice(0, PER_LINE + 1);
    const cut = Math.max(head.lastIndexOf("_"), head.lastIndexOf("-"), head.lastIndexOf("."), head.lastIndexOf("@"));
    const at = cut > 2 ? cut + (rest[cut] === "@" ? 0 : 1) : PER_LINE;
    lines.push(rest.slice(0, at));
    rest = rest.slice(at);
  }
  lines.push(rest);
  if (lines.length > MAX_LINES) lines.splice(MAX_LINES - 1, Infinity, `${lines[MAX_LINES - 1].slice(0, PER_LINE - 1)}…`);
  return lines;
}

export function mountGraph(root, { onSelect } = {}) {
  const svg = s("svg", { id: "graph-svg", role: "group", "aria-label": "The swarm's agents and who they can message" });
  const status = h("p", { id: "graph-status", class: "muted" }, "No task running.");
  const legend = h("ul", { class: "legend" },
    h("li", {}, h("span", { class: "swatch entry" }), "entrypoint"),
    h("li", {}, h("span", { class: "swatch completes" }), "can complete tasks"),
    h("li", {}, h("span", { class: "swatch remote" }), "remote agent (agent@swarm)"),
    h("li", {}, h("span", { class: "swatch active" }), "working now"),
    h("li", {}, h("span", { class: "swatch step" }), "holds the turn at the replayed step"));
  const wrap = h("div", { class: "graph-wrap panel" }, svg);
  root.append(wrap, legend, status);

  let agents = null;
  let nodes = new Map(); // name -> <g>
  let pos = new Map();
  let names = new Set();
  let width = 0;
  let current = null; // the working agent highlighted
  let marked = { agent: null, hop: null }; // the replayed step

  function draw() {
    if (!agents) return;
    width = svg.clientWidth || 640;
    const W = Math.round(width);
    const local = agents.agents.map((a) => a.name);
    const remote = [...new Set(agents.agents.flatMap((a) => a.comm_targets).filter((t) => t.includes("@")))];
    names = new Set(local);
    const labels = new Map([...local, ...remote].map((name) => {
      const agent = agents.agents.find((a) => a.name === name);
      const marks = [name === agents.entrypoint ? "entry" : "", agent?.can_complete_tasks ? "✓" : "", agent ? "" : "remote"].filter(Boolean);
      return [name, { lines: labelLines(name), marks }];
    }));
    R = Math.max(R_MIN, ...[...labels.values()].map(({ lines, marks }) =>
      radiusFor(lines.length + (marks.length ? 1 : 0), Math.max(...lines.map((l) => l.length), marks.join(" ").length))));
    const placed = layout([...local, ...remote], W, R);
    pos = placed.pos;
    svg.setAttribute("viewBox", `0 0 ${W} ${placed.H}`);
    svg.replaceChildren();
    const defs = s("defs");
    const marker = s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "10", markerHeight: "10", markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" });
    marker.append(s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }));
    defs.append(marker);
    svg.append(defs);
    const edges = s("g", { class: "edges" });
    for (const agent of agents.agents) {
      for (const target of agent.comm_targets) {
        const a = pos.get(agent.name);
        const b = pos.get(target);
        if (!a || !b) continue;
        const [x1, y1, x2, y2] = shorten(a, b);
        edges.append(s("line", { x1, y1, x2, y2, class: `edge${target.includes("@") ? " remote" : ""}`, "marker-end": "url(#arrow)", "data-from": agent.name, "data-to": target }));
      }
    }
    svg.append(edges);
    nodes = new Map();
    const group = s("g", { class: "nodes" });
    for (const name of [...local, ...remote]) {
      const agent = agents.agents.find((a) => a.name === name);
      const classes = ["node"];
      if (!agent) classes.push("remote");
      if (name === agents.entrypoint) classes.push("entry");
      if (agent?.can_complete_tasks) classes.push("completes");
      const { x, y } = pos.get(name);
      const g = s("g", { class: classes.join(" "), "data-agent": name, transform: `translate(${x} ${y})`, tabindex: "0", role: "button", "aria-label": `${name}: open its panel` });
      const { lines, marks } = labels.get(name);
      const rows = lines.length + (marks.length ? 1 : 0);
      const top = -((rows - 1) * LINE) / 2;
      const label = s("text", { class: "label", "text-anchor": "middle" });
      lines.forEach((line, i) => label.append(s("tspan", { x: "0", y: String(top + i * LINE), dy: "0.35em" }, line)));
      g.append(s("circle", { r: R }), label);
      if (marks.length) g.append(s("text", { class: "mark", "text-anchor": "middle", y: String(top + lines.length * LINE), dy: "0.35em" }, marks.join(" ")));
      g.append(s("title", {}, name));
      g.addEventListener("click", () => onSelect?.(name));
      g.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); onSelect?.(name); }
      });
      nodes.set(name, g);
      group.append(g);
    }
    svg.append(group);
    highlight(current);
    step(marked.agent, marked.hop);
  }

  function setAgents(next) {
    agents = next;
    draw();
  }

  // redraw at the box's width: one SVG unit per CSS pixel keeps the labels' size
  new ResizeObserver(() => {
    if (svg.clientWidth && Math.abs(svg.clientWidth - width) > 4) draw();
  }).observe(svg);

  function highlight(name) {
    current = name;
    for (const [n, g] of nodes) g.classList.toggle("active", n === name);
    status.textContent = name ? `Working: ${name}` : (store.running ? "Task running." : "No task running.");
  }

  /** Mark the agent holding the turn at a replayed step and the edges its message takes. */
  function step(agent, hop, { animate = false } = {}) {
    marked = { agent, hop };
    for (const [n, g] of nodes) {
      if (n === agent) g.dataset.step = "turn";
      else delete g.dataset.step;
    }
    for (const edge of svg.querySelectorAll("line.edge")) delete edge.dataset.step;
    if (!hop) return;
    for (const to of hop[1]) {
      const edge = svg.querySelector(`line[data-from="${CSS.escape(hop[0])}"][data-to="${CSS.escape(to)}"]`);
      if (edge) edge.dataset.step = "hop";
      if (animate) travel(hop[0], to, false);
    }
  }

  function travel(from, to, heat = true) {
    const a = pos.get(from);
    const b = pos.get(to);
    if (!a || !b || from === to) return;
    if (!reducedMotion()) {
      const [x1, y1, x2, y2] = shorten(a, b);
      const dot = s("circle", { r: 7, class: "packet" });
      const move = s("animateMotion", { dur: "0.7s", fill: "freeze", path: `M ${x1} ${y1} L ${x2} ${y2}` });
      dot.append(move);
      svg.append(dot);
      move.beginElement?.();
      setTimeout(() => dot.remove(), 900);
    }
    const edge = svg.querySelector(`line[data-from="${CSS.escape(from)}"][data-to="${CSS.escape(to)}"]`);
    if (edge && heat) { edge.classList.add("hot"); setTimeout(() => edge.classList.remove("hot"), 900); }
  }

  store.on((kind, payload) => {
    if (kind === "event") {
      const event = payload;
      const hop = event.event === "new_message" && hopOf(event);
      if (hop && store.running) for (const to of hop[1]) travel(hop[0], to);
      if (store.running) {
        const agent = event.event === "token_delta" ? event.data?.agent : workingAgent(event, names);
        if (agent && names.has(agent)) highlight(agent);
      }
    } else if (kind === "running" && !payload) {
      highlight(null);
    } else if (kind === "task") {
      highlight(null);
      step(null, null);
    }
  });

  return { setAgents, step, names: () => names };
}

function shorten(a, b) {
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const d = Math.hypot(dx, dy) || 1;
  const ux = dx / d;
  const uy = dy / d;
  // two agents that message each other get two parallel edges, not one line
  const ox = -uy * 6;
  const oy = ux * 6;
  return [a.x + ux * R + ox, a.y + uy * R + oy, b.x - ux * (R + 2) + ox, b.y - uy * (R + 2) + oy].map((v) => v.toFixed(1));
}
