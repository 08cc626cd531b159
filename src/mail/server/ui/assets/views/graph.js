// Agent graph: the swarm's agents and their comm_targets drawn as SVG; the entrypoint and
// the agents that can complete tasks are marked, remote agent@swarm targets drawn apart.
// While a task runs the working agent is highlighted and messages travel along the edges.
import { h } from "../dom.js";
import { hopOf, store, workingAgent } from "../store.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 640;
const H = 440;
const R = 42;

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

function layout(names) {
  const cx = W / 2;
  const cy = H / 2;
  const radius = Math.min(W, H) / 2 - R - 24;
  const pos = new Map();
  names.forEach((name, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / names.length;
    pos.set(name, names.length === 1 ? { x: cx, y: cy } : { x: cx + radius * Math.cos(angle), y: cy + radius * Math.sin(angle) });
  });
  return pos;
}

export function mountGraph(root) {
  const svg = s("svg", { id: "graph-svg", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "The swarm's agents and who they can message" });
  const status = h("p", { id: "graph-status", class: "muted" }, "No task running.");
  const legend = h("ul", { class: "legend" },
    h("li", {}, h("span", { class: "swatch entry" }), "entrypoint"),
    h("li", {}, h("span", { class: "swatch completes" }), "can complete tasks"),
    h("li", {}, h("span", { class: "swatch remote" }), "remote agent (agent@swarm)"),
    h("li", {}, h("span", { class: "swatch active" }), "working now"));
  root.append(h("div", { class: "graph-wrap panel" }, svg), legend, status);

  let nodes = new Map(); // name -> <g>
  let pos = new Map();
  let names = new Set();

  function draw(agents) {
    svg.replaceChildren();
    const local = agents.agents.map((a) => a.name);
    const remote = [...new Set(agents.agents.flatMap((a) => a.comm_targets).filter((t) => t.includes("@")))];
    names = new Set(local);
    pos = layout([...local, ...remote]);
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
      const g = s("g", { class: classes.join(" "), "data-agent": name, transform: `translate(${x} ${y})` });
      const marks = [name === agents.entrypoint ? "entry" : "", agent?.can_complete_tasks ? "✓" : "", agent ? "" : "remote"].filter(Boolean);
      g.append(s("circle", { r: R }), s("text", { "text-anchor": "middle", dy: marks.length ? "-0.1em" : "0.35em" }, label(name)));
      if (marks.length) g.append(s("text", { class: "mark", "text-anchor": "middle", y: 15 }, marks.join(" ")));
      g.append(s("title", {}, name));
      nodes.set(name, g);
      group.append(g);
    }
    svg.append(group);
  }

  function highlight(name) {
    for (const [n, g] of nodes) g.classList.toggle("active", n === name);
    status.textContent = name ? `Working: ${name}` : (store.running ? "Task running." : "No task running.");
  }

  function travel(from, to) {
    const a = pos.get(from);
    const b = pos.get(to);
    if (!a || !b || from === to) return;
    const [x1, y1, x2, y2] = shorten(a, b);
    const dot = s("circle", { r: 7, class: "packet" });
    const move = s("animateMotion", { dur: "0.7s", fill: "freeze", path: `M ${x1} ${y1} L ${x2} ${y2}` });
    dot.append(move);
    svg.append(dot);
    move.beginElement?.();
    setTimeout(() => dot.remove(), 900);
    const edge = svg.querySelector(`line[data-from="${CSS.escape(from)}"][data-to="${CSS.escape(to)}"]`);
    if (edge) { edge.classList.add("hot"); setTimeout(() => edge.classList.remove("hot"), 900); }
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
    }
  });

  return { setAgents: draw };
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

function label(name) {
  const short = name.split("@")[0];
  return short.length > 10 ? `${short.slice(0, 9)}…` : short;
}
