// The open task's budget, one line under the top bar: what it spent of each limit (the
// most spent first) and the limit that stopped it. Read from the `budget` of the closing
// event of each turn (stream, replay or follow); hidden for a task without a budget.
import { store } from "../store.js";

const amount = (value) => (Number.isInteger(value) ? value.toLocaleString("en-US") : String(Number(value.toFixed(4))));

/** A task's budget (`GET /task`'s, the closing event's) as one line; "" for none. */
export function budgetText(budget) {
  if (!budget || typeof budget !== "object") return "";
  const limits = budget.limits || {};
  const spent = budget.spent || {};
  const parts = Object.entries(limits)
    .filter(([name, limit]) => name !== "warn_at" && typeof limit === "number")
    .map(([name, limit]) => {
      const used = spent[name] ?? 0;
      return { share: limit ? used / limit : (used ? 1 : 0), text: `${name} ${amount(used)}/${amount(limit)}` };
    })
    .sort((a, b) => b.share - a.share)
    .map((p) => p.text);
  if (!parts.length) return "";
  const stopped = budget.stopped_by ? ` (stopped: ${budget.stopped_by} exceeded)` : "";
  return `Budget: ${parts.join(" · ")}${stopped}`;
}

export function mountBudget(el) {
  const show = (text) => { el.textContent = text; el.hidden = !text; };
  store.on((kind, payload) => {
    if (kind === "task") show("");
    else if (kind === "event" && payload?.data?.budget) show(budgetText(payload.data.budget));
  });
}
