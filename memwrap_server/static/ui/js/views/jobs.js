import { api, bankPath } from "../api.js";
import { badge, empty, h, link, route, section, table, truncate, when } from "../dom.js";

const STATES = ["queued", "running", "done", "failed", "cancelled"];
const STATE_KIND = { queued: "info", running: "info", done: "good", failed: "bad", cancelled: "" };

export async function jobsView({ bank, query }) {
  const status = query.get("status") || "";
  const kind = query.get("kind") || "";
  const [jobs, all] = await Promise.all([
    api("GET", bankPath(bank, "jobs"), { query: { status: status || null, kind: kind || null, limit: 200 } }),
    api("GET", bankPath(bank, "jobs"), { query: { limit: 1000 } }),
  ]);
  // Queue by kind and state, from the latest thousand jobs.
  const kinds = [...new Set(all.map((j) => j.kind))].sort();
  const count = (k, s) => all.filter((j) => j.kind === k && j.status === s).length;
  const matrix = table(["Kind", ...STATES], kinds.map((k) => h("tr", {},
    h("th", { scope: "row" }, link(route("b", bank, "jobs", { kind: k }), k)),
    STATES.map((s) => {
      const n = count(k, s);
      return h("td", { class: "num" }, n ? link(route("b", bank, "jobs", { kind: k, status: s }), badge(String(n), STATE_KIND[s])) : h("span", { class: "muted" }, "0"));
    }))));
  const failures = all.filter((j) => j.status === "failed" || (j.last_error && j.status !== "done"));
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Jobs"), h("p", { class: "muted" }, "The bank's background work: consolidation, mental model refreshes, re-extraction.")),
    section("Queue by kind and state", kinds.length ? matrix : empty("No job yet."),
      all.length === 1000 ? h("p", { class: "muted small" }, "Counted over the latest 1000 jobs.") : null),
    section("Failures", failures.length
      ? table(["Job", "Kind", "State", "Attempts", "Error", "When"], failures.slice(0, 50).map((j) => h("tr", {},
          h("td", { class: "num" }, `#${j.id}`), h("td", {}, j.kind), h("td", {}, badge(j.status, STATE_KIND[j.status])),
          h("td", { class: "num" }, `${j.attempts}/${j.max_attempts}`),
          h("td", { class: "bad-text" }, h("div", { class: "pre-wrap" }, truncate(j.last_error || "", 600))),
          h("td", {}, when(j.finished_at || j.started_at || j.created_at)))))
      : empty("No failure.")),
    section(status || kind ? `Jobs${kind ? ` of kind ${kind}` : ""}${status ? `, ${status}` : ""}` : "Latest jobs",
      status || kind ? h("p", {}, link(route("b", bank, "jobs"), "Show all")) : null,
      jobs.length
        ? table(["Job", "Kind", "State", "Attempts", "Created", "Finished", "Result or error"], jobs.map((j) => h("tr", {},
            h("td", { class: "num" }, `#${j.id}`), h("td", {}, j.kind), h("td", {}, badge(j.status, STATE_KIND[j.status])),
            h("td", { class: "num" }, `${j.attempts}/${j.max_attempts}`), h("td", {}, when(j.created_at)), h("td", {}, when(j.finished_at)),
            h("td", { class: "small" }, j.last_error ? h("span", { class: "bad-text" }, truncate(j.last_error, 200)) : j.result ? h("code", {}, truncate(JSON.stringify(j.result), 200)) : "—"))))
        : empty("No job here.")),
    section("Retain spool", h("p", { class: "muted" },
      "Exchanges a wrapped client or this server's proxy could not store yet wait in a spool file on the machine that made them, ",
      "not in the database, so the REST API cannot show them. On that machine, ", h("code", {}, "memwrap spool"), " counts them, ",
      h("code", {}, "memwrap spool list --dead"), " shows the dead letters and ", h("code", {}, "memwrap spool replay --dead"), " replays them.")));
}
