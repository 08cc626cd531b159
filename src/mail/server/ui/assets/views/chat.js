// Chat: send messages to the swarm, watch the answer stream in, follow up, stop, and answer
// breakpoint calls. Each answer is attributed to the agent that gave it, with the steps
// that led to it (views/steps.js) collapsed above it, built from the task's events as they
// arrive: live while the task runs, and the same for a task opened from the history.
import { api, isClosing } from "../api.js";
import { duration, h } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { breakpointCalls, store } from "../store.js";
import { mountActivity } from "./activity.js";
import { answerOf, isUserMessage, Steps } from "./steps.js";

export function mountChat(root, { session }) {
  const entrypoint = h("select", { id: "entrypoint", name: "entrypoint" });
  const taskLabel = h("span", { id: "task-label", class: "muted" });
  const messages = h("div", { id: "messages", class: "messages", "aria-live": "polite" });
  const breakpoint = h("div", { id: "breakpoint" });
  const text = h("textarea", {
    id: "message", name: "message", rows: "3", required: true,
    placeholder: "Ask the swarm… (Ctrl+Enter or ⌘+Enter sends; Enter starts a new line, as does Shift+Enter)",
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

  let turn = null; // the answer being built: see newTurn()
  let sending = false; // a message of this page is on its way (its own event opens no turn)

  const bubble = (kind, content, markdown = false, parent = messages) => {
    const body = h("div", { class: "body" });
    if (markdown) body.innerHTML = renderMarkdown(content);
    else body.textContent = content;
    const el = h("div", { class: `msg ${kind}` }, body);
    parent.append(el);
    el.scrollIntoView({ block: "end" });
    return el;
  };

  /** An answer: its markdown rendered, and a button that copies its text as written (the
   * button's label is drawn by CSS, so the answer's own text stays only the answer). */
  const answer = (content, parent, el = null) => {
    if (el) {
      el.classList.remove("live");
      el.querySelector(".body").innerHTML = renderMarkdown(content);
    } else {
      el = bubble("assistant", content, true, parent);
    }
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

  /**
   * One answer of the swarm: a head naming the agent that gave it, its steps (collapsed),
   * then the answer (streamed while the model writes it) or what stopped it.
   */
  function newTurn() {
    const who = h("strong", { class: "answer-agent" }, "");
    const meta = h("span", { class: "answer-meta muted" }, "working…");
    const count = h("span", { class: "steps-count" }, "0 steps");
    const list = h("ol", { class: "step-list" });
    const details = h("details", { class: "steps", hidden: true, "aria-live": "off" },
      h("summary", { title: "The messages between agents, the calls they made and their reasoning" }, count), list);
    const el = h("article", { class: "answer working" }, h("header", { class: "answer-head" }, who, meta), details);
    messages.append(el);
    const t = {
      el, who, meta, list, answer: null, live: null, liveText: "", done: false,
      steps: new Steps(list, () => {
        details.hidden = false;
        const agents = [...t.steps.agents];
        count.textContent = `${t.steps.count} step${t.steps.count === 1 ? "" : "s"} · ${agents.join(", ")}`;
      }),
    };
    return t;
  }

  const ensureTurn = () => (turn ??= newTurn());

  /** The head once the turn ended: who answered, and how long it took. */
  function settle(t, label) {
    t.done = true;
    t.el.classList.remove("working");
    for (const agent of [...t.steps.thinking.keys()]) t.steps.settle(agent);
    const agent = t.steps.answeredBy || t.answer?.agent || "";
    t.who.textContent = agent;
    const took = t.steps.first && t.steps.last ? Date.parse(t.steps.last) - Date.parse(t.steps.first) : NaN;
    t.meta.textContent = [agent ? label : label.replace(/^\w/, (c) => c.toUpperCase()), duration(took)].filter(Boolean).join(" · ");
  }

  /** An earlier turn of an opened task ends when the next message comes: its answer is
   * the ::task_complete:: message it carried. */
  function closeTurn() {
    const t = turn;
    turn = null;
    if (!t || t.done) return;
    if (t.answer) {
      answer(t.answer.body, t.el);
      settle(t, "answered");
    } else {
      settle(t, "no answer");
    }
  }

  const showTask = () => { taskLabel.textContent = store.taskId ? `task ${store.taskId}` : "new task"; };

  /** Every event of the current task, from this page's message or a followed stream. */
  function onEvent(event) {
    if (event.event === "token_delta") {
      const d = event.data || {};
      if (d.kind === "answer") {
        const t = ensureTurn();
        if (!t.live) t.live = bubble("assistant live", "", false, t.el);
        t.liveText += d.delta ?? "";
        t.live.querySelector(".body").innerHTML = renderMarkdown(t.liveText);
      } else {
        ensureTurn().steps.delta(d.agent, d.kind, d.delta ?? "");
      }
      return;
    }
    if (isClosing(event)) return; // finish() has it
    if (isUserMessage(event)) {
      if (sending) { sending = false; ensureTurn(); } else {
        closeTurn();
        const m = event.data.extra_data.full_message.message;
        bubble("user", m.body ?? "");
        turn = newTurn();
      }
    }
    const t = ensureTurn();
    t.steps.add(event);
    const found = answerOf(event);
    if (found) t.answer = found;
  }

  function finish(closing) {
    const t = ensureTurn();
    turn = null;
    if (typeof closing.timestamp === "string" && t.steps.first) t.steps.last = closing.timestamp;
    const live = t.live;
    t.live = null;
    if (closing.status === "waiting_breakpoint") {
      live?.remove();
      settle(t, "paused on a breakpoint");
      store.pendingCalls = breakpointCalls(store.events, closing.response);
      bubble("note", `The task paused on ${store.pendingCalls.length} breakpoint call(s): answer below.`, false, t.el);
      renderBreakpoint();
    } else if (closing.status === "failed" || closing.status === "cancelled") {
      live?.remove();
      settle(t, closing.status);
      bubble("error", `Task ${closing.status}: ${closing.response}`, false, t.el);
    } else {
      answer(closing.response ?? "", t.el, live);
      settle(t, "answered");
    }
  }

  async function run(message, userText) {
    closeTurn();
    if (userText !== undefined) bubble("user", userText);
    turn = newTurn();
    sending = userText !== undefined;
    store.setRunning(true);
    breakpoint.replaceChildren();
    try {
      finish(await api.send(message, (e) => store.add(e)));
    } catch (e) {
      const t = ensureTurn();
      turn = null;
      t.live?.remove();
      settle(t, "failed");
      bubble("error", e.message, false, t.el);
    } finally {
      sending = false;
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
      const said = results.map((r, i) => `${calls[i].name} → ${r.content}`).join("\n");
      run({ task_id: store.taskId, resume_from: "breakpoint_tool_call", kwargs: { breakpoint_tool_call_result: results } }, said);
    });
    breakpoint.replaceChildren(form);
  }

  compose.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const body = text.value.trim();
    if (!body || store.running) return;
    text.value = "";
    const message = { body, entrypoint: entrypoint.value || undefined };
    if (store.taskId) Object.assign(message, { task_id: store.taskId, resume_from: "user_response" });
    run(message, body);
  });
  text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      compose.requestSubmit();
    }
  });
  stop.addEventListener("click", async () => {
    if (!store.taskId) return;
    try { await api.cancel(store.taskId); } catch (e) { bubble("error", e.message); }
  });
  newTask.addEventListener("click", () => store.setTask(null));

  store.on((kind, payload) => {
    if (kind === "event") {
      onEvent(payload);
    } else if (kind === "running") {
      send.disabled = payload;
      stop.hidden = !payload || session.keyless;
      stop.disabled = !store.taskId; // known from the stream's first event
    } else if (kind === "task") {
      messages.replaceChildren();
      breakpoint.replaceChildren();
      turn = null;
      sending = false;
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
    /** An opened task's stream has ended: the answer of its last turn (its conversation and
     * steps were drawn from its events as they came). Without a closing event (a replay
     * that gives none), the last turn's own answer message. */
    replayed(closing) {
      if (closing) finish(closing);
      else closeTurn();
    },
  };
}

function pretty(args) {
  try { return JSON.stringify(typeof args === "string" ? JSON.parse(args) : args, null, 2); } catch { return String(args); }
}
