// Federation (admins): the swarms this server knows, with their health.
import { api } from "../api.js";
import { h, time } from "../dom.js";

export function mountFederation(root) {
  const body = h("tbody", { id: "swarms" });
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const refresh = h("button", { type: "button", class: "ghost" }, "Refresh");
  root.append(
    h("div", { class: "toolbar" }, h("h2", {}, "Peer swarms"), refresh), error,
    h("div", { class: "table-wrap" }, h("table", { class: "swarms" },
      h("thead", {}, h("tr", {}, ["swarm", "health", "latency", "last seen", "base URL", "version", "description"].map((c) => h("th", {}, c)))),
      body)));

  async function load() {
    error.hidden = true;
    try {
      const { swarms } = await api.swarms();
      body.replaceChildren(...swarms.map((sw) => h("tr", {},
        h("td", {}, sw.swarm_name),
        h("td", {}, h("span", { class: `health ${sw.is_active ? "up" : "down"}` }, sw.is_active ? "active" : "inactive")),
        h("td", {}, sw.latency == null ? "—" : `${Math.round(sw.latency * 1000)} ms`),
        h("td", {}, sw.last_seen ? time(sw.last_seen) : "—"),
        h("td", {}, sw.base_url ?? ""),
        h("td", {}, sw.version ?? ""),
        h("td", {}, sw.swarm_description ?? ""))));
      if (!swarms.length) body.append(h("tr", {}, h("td", { colspan: "7", class: "muted" }, "No swarms registered.")));
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
    }
  }
  refresh.addEventListener("click", load);
  return { load };
}
