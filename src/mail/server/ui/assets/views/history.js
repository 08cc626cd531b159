// Task history: the caller's tasks, newest first, a page at a time; opening one replays its
// events (and follows it live while it runs).
import { api } from "../api.js";
import { h, time } from "../dom.js";

const PAGE = 20;

export function mountHistory(root, { openTask }) {
  const list = h("ul", { id: "history", class: "history" });
  const more = h("button", { type: "button", id: "history-more", class: "ghost", hidden: true }, "Older tasks");
  const refresh = h("button", { type: "button", id: "history-refresh", class: "ghost" }, "Refresh");
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const empty = h("p", { class: "muted", hidden: true }, "No tasks yet.");
  root.append(h("div", { class: "toolbar" }, h("h2", {}, "Your tasks"), refresh), error, empty, list, more);

  let cursor = null;

  async function load(next) {
    error.hidden = true;
    try {
      const page = await api.tasks(PAGE, next);
      if (!next) list.replaceChildren();
      for (const task of page.tasks) list.append(item(task));
      cursor = page.next_cursor;
      more.hidden = !cursor;
      empty.hidden = list.children.length > 0;
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
    }
  }

  function item(task) {
    const state = task.state ?? (task.is_running ? "running" : "completed");
    const open = h("button", { type: "button", class: "task-open", dataset: { task: task.task_id } },
      h("span", { class: "title" }, task.title || task.task_id),
      h("span", { class: `state s-${state}` }, state),
      h("span", { class: "time muted" }, time(task.start_time)));
    open.addEventListener("click", () => openTask(task.task_id));
    return h("li", {}, open);
  }

  refresh.addEventListener("click", () => load(null));
  more.addEventListener("click", () => load(cursor));
  return { load: () => load(null) };
}
