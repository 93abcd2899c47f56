import { api, bankPath } from "../api.js";
import { badge, empty, h, link, route, section, table, truncate, when } from "../dom.js";

const STATES = ["queued", "running", "done", "failed", "cancelled"];
const STATE_KIND = { queued: "info", running: "info", done: "good", failed: "bad", cancelled: "" };

export async function jobsView({ bank, query, navigate, errorView }) {
  const status = query.get("status") || "";
  const kind = query.get("kind") || "";
  const spool = spoolSection(bank, navigate, errorView); // fetched alongside the jobs
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
    await spool);
}

// What this server's proxy has queued on its disk for the bank and not yet stored, and the dead letters (turns whose
// delivery failed alone too often) with replay and delete. Per server: each machine has its own spool.
async function spoolSection(bank, navigate, errorView) {
  const [summary, dead] = await Promise.all([
    api("GET", "/v1/spool"),
    api("GET", "/v1/spool/rows", { query: { dead: true, bank_id: bank, limit: 200 } }),
  ]);
  const status = h("div", { class: "action-status", "aria-live": "polite" });
  const act = async (label, fn) => {
    status.replaceChildren(h("span", { class: "muted" }, `${label}…`));
    try {
      const done = await fn();
      status.replaceChildren(h("span", {}, `${label}: ${done.count} row(s).`));
      setTimeout(() => navigate(location.hash), 800);
    } catch (error) {
      status.replaceChildren(errorView(error, bank));
    }
  };
  const replay = (ids) => act("Replayed", () => api("POST", "/v1/spool/dead/replay", { body: { ids } }));
  const purge = (ids) => {
    if (!confirm(ids.length === 1 ? "Delete this turn for good? Nobody stored it." : `Delete these ${ids.length} turns for good? Nobody stored them.`)) return;
    act("Deleted", () => api("POST", "/v1/spool/dead/purge", { body: { ids } }));
  };
  const waiting = summary.waiting_by_bank[bank] || 0;
  const ids = dead.map((r) => r.id);
  return section("Retain spool on this server",
    h("p", { class: "muted" }, `${waiting} turn(s) of this bank waiting for delivery, ${dead.length} dead. `,
      "Wrapped clients keep a spool of their own on their machine: there, ", h("code", {}, "memwrap spool"), " shows it."),
    dead.length
      ? h("div", {},
          table(["Row", "Spooled", "Document", "Turn", "Last error", ""], dead.map((r) => h("tr", { "data-spool-id": r.id },
            h("td", { class: "num" }, `#${r.id}`), h("td", {}, when(r.created)),
            h("td", { class: "mono small" }, r.document_id ? truncate(r.document_id, 40) : "—"),
            h("td", { dir: "auto" }, truncate(r.text, 200)),
            h("td", { class: "bad-text small" }, truncate(r.error || "", 300)),
            h("td", { class: "row" },
              h("button", { type: "button", class: "replay", "aria-label": `Replay row ${r.id}`, onclick: () => replay([r.id]) }, "Replay"),
              h("button", { type: "button", class: "danger purge", "aria-label": `Delete row ${r.id}`, onclick: () => purge([r.id]) }, "Delete…"))))),
          h("div", { class: "row actions" },
            h("button", { type: "button", id: "replay-all", onclick: () => replay(ids) }, `Replay all ${ids.length}`), status))
      : h("div", {}, empty("No dead letter."), status));
}
