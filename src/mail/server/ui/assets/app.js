// The page: sign-in, tabs, theme, and the views wired to the store.
import { api, session } from "./api.js";
import { store } from "./store.js";
import { mountBudget } from "./views/budget.js";
import { mountChat } from "./views/chat.js";
import { mountConversation } from "./views/conversation.js";
import { mountFederation } from "./views/federation.js";
import { mountGraph } from "./views/graph.js";
import { mountHistory } from "./views/history.js";
import { mountReplay } from "./views/replay.js";
import { mountTimeline } from "./views/timeline.js";

const $ = (selector) => document.querySelector(selector);
const VIEWS = ["chat", "graph", "timeline", "history", "federation"];

// --- theme: the system's, until the toggle picks one ------------------------------------------
function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}
function currentTheme() {
  return document.documentElement.dataset.theme
    || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
}
applyTheme(localStorage.getItem("mail.theme"));
$("#theme-toggle").addEventListener("click", () => {
  const next = currentTheme() === "dark" ? "light" : "dark";
  localStorage.setItem("mail.theme", next);
  applyTheme(next);
});

// --- keyboard: Escape closes the innermost open <details> around the focus (or, when the
// focus is on no such element, the last one opened) and gives its summary the focus -------
let lastOpened = null;
document.addEventListener("toggle", (ev) => { if (ev.target.open) lastOpened = ev.target; }, true);
document.addEventListener("keydown", (ev) => {
  if (ev.key !== "Escape" || ev.defaultPrevented) return;
  const active = document.activeElement;
  let open = active?.closest?.("details[open]") ?? null;
  if (!open && lastOpened?.open && lastOpened.isConnected) open = lastOpened;
  if (!open) return;
  open.open = false;
  open.querySelector(":scope > summary")?.focus();
  ev.preventDefault();
});

// --- views ----------------------------------------------------------------------------------
let openTaskAbort = null;

async function openTask(taskId, view = "timeline") {
  openTaskAbort?.abort();
  const abort = new AbortController();
  openTaskAbort = abort;
  store.setTask(taskId);
  show(view);
  store.setRunning(true);
  try {
    const closing = await api.follow(taskId, (e) => store.add(e), { signal: abort.signal });
    if (!abort.signal.aborted) chat.replayed(closing);
  } catch (e) {
    if (!abort.signal.aborted) chat.replayed({ status: "failed", response: e.message });
  } finally {
    if (!abort.signal.aborted) store.setRunning(false);
  }
}

const chat = mountChat($("#view-chat"), { session });
const graph = mountGraph($("#view-graph"), { onSelect: (name) => replay.select(name) });
const replay = mountReplay($("#view-graph"), { graph }); // under the graph, with the agent's panel
const conversation = mountConversation($("#view-timeline")); // above the task's events
// a bar of the waterfall opens the graph's replay at its event
mountTimeline($("#view-timeline"), { onPick: (index) => { show("graph"); replay.goTo(index); } });
const history = mountHistory($("#view-history"), { openTask });
const federation = mountFederation($("#view-federation"));
mountBudget($("#task-budget"));

function show(view) {
  if (!VIEWS.includes(view) || (view === "federation" && store.me?.role !== "admin")) view = "chat";
  for (const name of VIEWS) {
    $(`#view-${name}`).hidden = name !== view;
    $(`.tab[data-view="${name}"]`).setAttribute("aria-selected", String(name === view));
  }
  writeHash(view);
  if (view === "history") history.load();
  if (view === "federation") federation.load();
}

// --- the address: #<view>, or #/task/<id>/<view> while a task is open (a link to share) ----
const TASK_HASH = /^#\/task\/([^/]+)(?:\/(\w+))?$/;
const shownView = () => VIEWS.find((name) => !$(`#view-${name}`).hidden) ?? "chat";

function writeHash(view) {
  const hash = store.taskId ? `#/task/${encodeURIComponent(store.taskId)}/${view}` : `#${view}`;
  if (location.hash !== hash) window.history.replaceState(null, "", hash);
}

/** Show what the address names: a view, or a task (opened unless it is the current one). */
function route() {
  const task = location.hash.match(TASK_HASH);
  if (!task) { show(location.hash.slice(1)); return; }
  const taskId = decodeURIComponent(task[1]);
  if (taskId === store.taskId) show(task[2]);
  else openTask(taskId, task[2] ?? "chat");
}

for (const tab of document.querySelectorAll(".tab")) {
  tab.addEventListener("click", () => show(tab.dataset.view));
}
window.addEventListener("hashchange", () => { if (store.me) route(); });
store.on((kind) => { if (kind === "task" || kind === "task-id") writeHash(shownView()); });

// --- sign-in --------------------------------------------------------------------------------
function loginError(message) {
  const el = $("#login-error");
  el.textContent = message;
  el.hidden = !message;
}

async function showLogin(message = "") {
  for (const name of VIEWS) $(`#view-${name}`).hidden = true;
  $("#tabs").hidden = true;
  $("#logout").hidden = true;
  $("#identity").textContent = "";
  $("#login").hidden = false;
  loginError(message);
  $("#keyless").hidden = !api.keylessAllowed();
  $("#api-key").focus();
}

async function enter() {
  try {
    store.me = await api.whoami();
  } catch (e) {
    session.clear();
    await showLogin(e.message);
    return;
  }
  $("#login").hidden = true;
  $("#tabs").hidden = false;
  $("#logout").hidden = false;
  $("#identity").textContent = `${store.me.id} (${store.me.role})`;
  $('.tab[data-view="federation"]').hidden = store.me.role !== "admin";
  conversation.connect();
  try {
    const [root, agents] = await Promise.all([api.root(), api.agents()]);
    store.swarm = root.swarm;
    store.agents = agents;
    $("#swarm-name").textContent = root.swarm?.name ?? "";
    chat.setAgents(agents);
    graph.setAgents(agents);
  } catch (e) {
    loginError(e.message);
  }
  route();
}

$("#login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const key = $("#api-key").value.trim();
  if (!key) return;
  session.useKey(key);
  $("#api-key").value = "";
  enter();
});
$("#keyless-button").addEventListener("click", () => { session.useKeyless(); enter(); });
$("#logout").addEventListener("click", () => {
  session.clear();
  store.me = null;
  store.setTask(null);
  showLogin();
});

if (session.signedIn) enter();
else showLogin();
