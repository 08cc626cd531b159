// The current task's MAP Mail conversation (a conversation created with its taskId): its
// subject, status and participants, and every turn the server lets the caller see, in order,
// filterable by thread; followed live through map/subscribe while it is shown. Hidden when
// the server has no MAP Mail (or this browser has no key); a discreet line when the task
// has no conversation.
import { api, MAIL_NOT_ENABLED, MapError } from "../api.js";
import { h, time } from "../dom.js";
import { store } from "../store.js";

const NO_THREAD = "-";

/** A turn's text: content.text, else its content as JSON. */
function turnText(turn) {
  const c = turn.content;
  if (typeof c === "string") return c;
  if (c && typeof c.text === "string") return c.text;
  return JSON.stringify(c ?? null);
}

function toolLine(content) {
  const args = content?.toolArgs;
  const shown = args === undefined ? "" : (typeof args === "string" ? args : JSON.stringify(args));
  return `${content?.toolName ?? "tool"}(${shown})`;
}

export function mountConversation(root) {
  const subject = h("span", { id: "conversation-subject", class: "subject" });
  const status = h("span", { id: "conversation-status", class: "state" });
  const kind = h("span", { id: "conversation-type", class: "muted" });
  const participants = h("ul", { id: "conversation-participants", class: "participants" });
  const threadFilter = h("select", { id: "conversation-thread", name: "thread" });
  const count = h("span", { id: "conversation-count", class: "muted" });
  const turns = h("ol", { id: "conversation-turns", class: "turns" });
  const error = h("p", { id: "conversation-error", class: "error", role: "alert", hidden: true });
  const section = h("section", { id: "conversation", class: "panel conversation", hidden: true, "aria-label": "Conversation" },
    h("div", { class: "conv-head" }, h("h2", {}, "Conversation"), subject, status, kind),
    participants,
    h("div", { class: "toolbar" }, h("label", { for: "conversation-thread" }, "Thread"), threadFilter, count),
    error, turns);
  const none = h("p", { id: "conversation-none", class: "muted", hidden: true }, "No conversation for this task.");
  root.append(section, none);

  let enabled = Promise.resolve(false);
  // the shown task: {taskId, abort, id (its conversation's), seen (turn ids), lastId, threads
  // (by id), busy (the running sync), want ({meta, turns}: what the next sync reads)}
  let view = null;

  const matches = (turn) => {
    const wanted = threadFilter.value;
    if (!wanted) return true;
    return wanted === NO_THREAD ? !turn.threadId : turn.threadId === wanted;
  };

  function threadName(thread) {
    return thread.subject || `thread ${thread.id}`;
  }

  function row(turn) {
    const thread = turn.threadId && view.threads.get(turn.threadId);
    const head = [
      h("span", { class: "author" }, turn.participantId ?? ""),
      h("span", { class: "ctype" }, turn.contentType ?? ""),
      thread ? h("span", { class: "thread-tag" }, `⤷ ${threadName(thread)}`) : null,
      turn.visibility && turn.visibility.type !== "all" ? h("span", { class: "muted" }, `(${turn.visibility.type})`) : null,
    ];
    const when = h("span", { class: "time muted" }, turn.timestamp ? time(turn.timestamp) : "");
    const dataset = { type: turn.contentType ?? "", author: turn.participantId ?? "", thread: turn.threadId ?? "", id: turn.id };
    let body;
    if (turn.contentType === "x-tool-call") {
      body = h("details", { class: "tool" },
        h("summary", {}, head, h("span", { class: "text" }, toolLine(turn.content)), when),
        h("pre", { class: "json" }, JSON.stringify(turn.content, null, 2)));
    } else {
      const subjectLine = typeof turn.content?.subject === "string" && turn.content.subject
        ? h("div", { class: "turn-subject muted" }, turn.content.subject) : null;
      body = h("div", { class: "turn-body" }, h("div", { class: "turn-head" }, head, when), subjectLine,
        h("div", { class: "text" }, turnText(turn)));
    }
    const li = h("li", { class: "turn", dataset }, body);
    li.hidden = !matches(turn);
    return li;
  }

  function showCount() {
    const shown = [...turns.children].filter((li) => !li.hidden).length;
    count.textContent = `${shown} of ${turns.children.length} turns`;
  }

  function showMeta(got) {
    const c = got.conversation;
    subject.textContent = c.subject || c.id;
    status.textContent = c.status;
    status.className = `state s-${c.status}`;
    kind.textContent = `${c.type} · ${c.id}`;
    participants.replaceChildren(...(got.participants || []).map((p) =>
      h("li", { dataset: { id: p.id } }, h("span", { class: "author" }, p.id), " ", h("span", { class: "muted" }, p.role))));
    view.threads = new Map((got.threads || []).map((t) => [t.id, t]));
    const selected = threadFilter.value;
    threadFilter.replaceChildren(
      h("option", { value: "" }, "all threads"),
      h("option", { value: NO_THREAD }, "main (no thread)"),
      ...[...view.threads.values()].map((t) => h("option", { value: t.id }, `${"  ".repeat(Math.max(0, (t.depth ?? 1) - 1))}${threadName(t)}`)));
    threadFilter.value = view.threads.has(selected) || selected === NO_THREAD ? selected : "";
  }

  function addTurns(list) {
    for (const turn of list) {
      if (view.seen.has(turn.id)) continue;
      view.seen.add(turn.id);
      view.lastId = turn.id;
      turns.append(row(turn));
    }
    showCount();
  }

  function fail(e) {
    if (e instanceof MapError && e.code === MAIL_NOT_ENABLED) { // switched off: hide it
      enabled = Promise.resolve(false);
      close();
      return;
    }
    error.textContent = `The conversation could not be read: ${e.message}`;
    error.hidden = false;
    section.hidden = false;
  }

  /** Bring the shown conversation up to date: what = {meta, turns}; one request at a time. */
  async function sync(target, what) {
    target.want.meta ||= what.meta;
    target.want.turns ||= what.turns;
    if (target.busy) return target.busy;
    target.busy = (async () => {
      try {
        while (target === view && (target.want.meta || target.want.turns)) {
          const { meta, turns: more } = target.want;
          target.want = { meta: false, turns: false };
          const [got, list] = await Promise.all([
            meta ? api.map.conversation(target.id) : null,
            more ? api.map.turns(target.id, target.lastId) : null,
          ]);
          if (target !== view) return;
          if (got) showMeta(got);
          if (list) addTurns(list);
          error.hidden = true;
        }
      } catch (e) {
        if (target === view && !target.abort.signal.aborted) fail(e);
      } finally {
        target.busy = null;
      }
    })();
    return target.busy;
  }

  const onEvent = (target) => (event) => {
    if (target !== view) return;
    if (event.type === "mail.turn.added") sync(target, { turns: true });
    else sync(target, { meta: true }); // closed, joined, left, a new thread: the header
  };

  function close() {
    view?.abort.abort();
    view = null;
    section.hidden = true;
    none.hidden = true;
  }

  /** Show the conversation of taskId (nothing for null), following it live. */
  async function load(taskId) {
    if (view?.taskId === taskId && taskId) return;
    close();
    if (!taskId) return;
    const target = { taskId, abort: new AbortController(), id: null, seen: new Set(), lastId: null, threads: new Map(), busy: null, want: { meta: false, turns: false } };
    view = target;
    for (const el of [subject, status, kind, count]) el.textContent = "";
    turns.replaceChildren();
    participants.replaceChildren();
    threadFilter.replaceChildren(h("option", { value: "" }, "all threads"));
    error.hidden = true;
    if (!(await enabled) || view !== target) { if (view === target) view = null; return; }
    let found;
    try {
      found = await api.map.taskConversation(taskId);
    } catch (e) {
      if (view === target) fail(e);
      return;
    }
    if (view !== target) return;
    if (!found) { none.hidden = false; return; }
    target.id = found.id;
    showMeta({ conversation: found });
    section.hidden = false;
    api.map.follow(found.id, onEvent(target), {
      signal: target.abort.signal,
      onOpen: () => sync(target, { meta: true, turns: true }),
    }).catch((e) => { if (view === target && !target.abort.signal.aborted) fail(e); });
  }

  threadFilter.addEventListener("change", () => {
    for (const li of turns.children) {
      li.hidden = !matches({ threadId: li.dataset.thread || null });
    }
    showCount();
  });

  store.on((kind, payload) => {
    if (kind === "task" || kind === "task-id") load(payload);
    // a task without a conversation may get one while it runs: look again when its turn ends
    else if (kind === "running" && !payload && view && !view.id && store.taskId === view.taskId) {
      const taskId = view.taskId;
      view = null;
      load(taskId);
    }
  });

  return {
    /** After sign-in: ask once whether the server offers MAP Mail; then show the task's. */
    connect() {
      enabled = api.map.mailEnabled();
      const taskId = store.taskId;
      close();
      if (taskId) load(taskId);
    },
  };
}
