// Chat: send messages to the swarm, watch the answer stream in, follow up, stop, and answer
// breakpoint calls.
import { api } from "../api.js";
import { h } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { breakpointCalls, hopOf, store } from "../store.js";
import { mountActivity } from "./activity.js";

export function mountChat(root, { session }) {
  const entrypoint = h("select", { id: "entrypoint", name: "entrypoint" });
  const taskLabel = h("span", { id: "task-label", class: "muted" });
  const messages = h("div", { id: "messages", class: "messages", "aria-live": "polite" });
  const breakpoint = h("div", { id: "breakpoint" });
  const text = h("textarea", {
    id: "message", name: "message", rows: "3", required: true,
    placeholder: "Ask the swarm… (Ctrl+Enter or ⌘+Enter sends; Enter starts a new line)",
    "aria-keyshortcuts": "Control+Enter Meta+Enter",
  });
  const send = h("button", { type: "submit", id: "send" }, "Send");
  const stop = h("button", { type: "button", id: "stop", class: "danger", hidden: true }, "Stop");
  const compose = h("form", { id: "compose", class: "compose" }, text, h("div", { class: "actions" }, send, stop));
  const newTask = h("button", { type: "button", id: "new-task", class: "ghost" }, "New task");
  const foot = h("div", { class: "chat-foot" });
  root.append(
    h("div", { class: "toolbar" }, h("label", { for: "entrypoint" }, "Entrypoint"), entrypoint, newTask, taskLabel),
    messages, breakpoint, foot,
  );
  mountActivity(foot);
  foot.append(compose);

  let live = null; // {el, text} of the answer being streamed

  const bubble = (kind, content, markdown = false) => {
    const body = h("div", { class: "body" });
    if (markdown) body.innerHTML = renderMarkdown(content);
    else body.textContent = content;
    const el = h("div", { class: `msg ${kind}` }, body);
    messages.append(el);
    el.scrollIntoView({ block: "end" });
    return el;
  };

  /** An answer: its markdown rendered, and a button that copies its text as written (the
   * button's label is drawn by CSS, so the answer's own text stays only the answer). */
  const answer = (content) => {
    const el = bubble("assistant", content, true);
    const copy = h("button", { type: "button", class: "ghost copy", "aria-label": "Copy the answer", title: "Copy the answer's text (markdown)" });
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(content);
        copy.dataset.state = "copied";
      } catch (e) {
        copy.dataset.state = "failed";
        copy.title = `Not copied: ${e.message}`;
      }
      setTimeout(() => { delete copy.dataset.state; }, 2000);
    });
    el.append(h("div", { class: "msg-actions" }, copy));
    return el;
  };

  const showTask = () => { taskLabel.textContent = store.taskId ? `task ${store.taskId}` : "new task"; };

  function onEvent(event) {
    if (event.event !== "token_delta" || event.data?.kind !== "answer") return;
    if (!live) live = { el: bubble("assistant live", ""), text: "" };
    live.text += event.data.delta ?? "";
    live.el.querySelector(".body").innerHTML = renderMarkdown(live.text);
  }

  function finish(closing) {
    const el = live?.el;
    live = null;
    if (el) el.remove();
    if (closing.status === "waiting_breakpoint") {
      store.pendingCalls = breakpointCalls(store.events, closing.response);
      bubble("note", `The task paused on ${store.pendingCalls.length} breakpoint call(s): answer below.`);
      renderBreakpoint();
    } else if (closing.status === "failed" || closing.status === "cancelled") {
      bubble("error", `Task ${closing.status}: ${closing.response}`);
    } else {
      answer(closing.response ?? "");
    }
  }

  async function run(message) {
    store.setRunning(true);
    breakpoint.replaceChildren();
    try {
      finish(await api.send(message, (e) => { store.add(e); onEvent(e); }));
    } catch (e) {
      live?.el.remove();
      live = null;
      bubble("error", e.message);
    } finally {
      store.setRunning(false);
    }
  }

  function renderBreakpoint() {
    const calls = store.pendingCalls || [];
    if (!calls.length) { breakpoint.replaceChildren(); return; }
    const fields = calls.map((call, i) => h("fieldset", { class: "call" },
      h("legend", {}, call.name),
      h("pre", { class: "args" }, pretty(call.arguments)),
      h("label", { for: `bp-${i}` }, `Result of ${call.name}`),
      h("textarea", { id: `bp-${i}`, name: call.call_id, rows: "2", required: true, class: "bp-result" })));
    const form = h("form", { id: "breakpoint-form", class: "panel breakpoint" },
      h("h3", {}, "Breakpoint: the task waits for these results"), fields,
      h("button", { type: "submit" }, "Resume"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const results = calls.map((call, i) => ({ call_id: call.call_id, content: form.querySelector(`#bp-${i}`).value }));
      store.pendingCalls = null;
      bubble("user", results.map((r, i) => `${calls[i].name} → ${r.content}`).join("\n"));
      run({ task_id: store.taskId, resume_from: "breakpoint_tool_call", kwargs: { breakpoint_tool_call_result: results } });
    });
    breakpoint.replaceChildren(form);
  }

  compose.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const body = text.value.trim();
    if (!body || store.running) return;
    text.value = "";
    bubble("user", body);
    const message = { body, entrypoint: entrypoint.value || undefined };
    if (store.taskId) Object.assign(message, { task_id: store.taskId, resume_from: "user_response" });
    run(message);
  });
  text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) compose.requestSubmit();
  });
  stop.addEventListener("click", async () => {
    if (!store.taskId) return;
    try { await api.cancel(store.taskId); } catch (e) { bubble("error", e.message); }
  });
  newTask.addEventListener("click", () => store.setTask(null));

  store.on((kind, payload) => {
    if (kind === "running") {
      send.disabled = payload;
      stop.hidden = !payload || session.keyless;
      stop.disabled = !store.taskId; // known from the stream's first event
    } else if (kind === "task") {
      messages.replaceChildren();
      breakpoint.replaceChildren();
      showTask();
    } else if (kind === "task-id") {
      stop.disabled = false;
      showTask();
    }
  });
  showTask();

  return {
    setAgents(agents) {
      entrypoint.replaceChildren(...agents.agents.filter((a) => a.enable_entrypoint)
        .map((a) => h("option", { value: a.name, selected: a.name === agents.entrypoint }, a.name)));
    },
    /** An opened task: its conversation from the replayed events, then its answer. */
    replayed(closing) {
      for (const event of store.events) {
        const hop = event.event === "new_message" && hopOf(event);
        const m = event.data?.extra_data?.full_message?.message;
        if (hop && m && ["user", "admin"].includes(m.sender?.address_type)) bubble("user", m.body ?? "");
      }
      if (closing) finish(closing);
    },
  };
}

function pretty(args) {
  try { return JSON.stringify(typeof args === "string" ? JSON.parse(args) : args, null, 2); } catch { return String(args); }
}
