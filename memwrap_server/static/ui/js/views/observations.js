import { api, bankPath } from "../api.js";
import { badge, empty, h, link, route, section, table, when } from "../dom.js";

const PAGE = 50;
const TREND = { strengthening: "good", stable: "", new: "info", weakening: "warn", stale: "bad" };

export async function observationsView({ bank, query }) {
  const offset = Math.max(0, parseInt(query.get("offset") || "0", 10) || 0);
  const withInvalidated = query.get("invalidated") === "1";
  const items = await api("GET", bankPath(bank, "observations"), { query: { limit: PAGE + 1, offset, include_invalidated: withInvalidated } });
  const more = items.length > PAGE;
  const here = (o, inv = withInvalidated) => route("b", bank, "observations", { offset: o || null, invalidated: inv ? "1" : null });
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Observations"),
      h("p", { class: "muted" }, "What the worker consolidated from many facts, best supported first. ",
        link(here(0, !withInvalidated), withInvalidated ? "Hide invalidated" : "Show invalidated too"))),
    items.length
      ? table(["Observation", "Trend", "Proof", "Evidence", "Version", "Last evidence"], items.slice(0, PAGE).map((o) => h("tr", { "data-id": o.id },
          h("td", {}, link(route("b", bank, "o", o.id), o.text), o.invalidated_at ? [" ", badge("invalidated", "bad")] : null,
            o.tags.length ? h("div", {}, o.tags.map((t) => h("span", { class: "tag" }, t))) : null),
          h("td", {}, badge(o.trend, TREND[o.trend])),
          h("td", { class: "num" }, o.proof_count),
          h("td", { class: "num" }, o.evidence_count),
          h("td", { class: "num" }, `v${o.version}`),
          h("td", {}, when(o.last_evidence_at)))), { class: "observations" })
      : empty("No observation yet. The worker consolidates facts into observations in the background (or POST /consolidate)."),
    h("nav", { class: "pager", "aria-label": "Pages" },
      offset > 0 ? link(here(Math.max(0, offset - PAGE)), "← Previous") : h("span", {}),
      h("span", {}),
      more ? link(here(offset + PAGE), "Next →") : h("span", {})));
}

export async function observationView({ bank, params }) {
  const id = params[1];
  const [obs, history] = await Promise.all([
    api("GET", bankPath(bank, "observations", id)),
    api("GET", bankPath(bank, "observations", id, "history")),
  ]);
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Observation"), link(route("b", bank, "observations"), "← all observations")),
    h("section", { class: "card" },
      h("blockquote", { class: "memory-text", dir: "auto" }, obs.text),
      h("div", { class: "row" }, badge(obs.trend, TREND[obs.trend]), badge(`proof ${obs.proof_count}`), badge(`${obs.evidence_count} evidence`),
        badge(`v${obs.version}`), badge(obs.origin), obs.invalidated_at ? badge("invalidated", "bad") : null,
        h("span", { class: "muted small" }, "first evidence ", when(obs.first_evidence_at), " · last ", when(obs.last_evidence_at))),
      h("p", {}, link(route("b", bank, "m", obs.id), "Open it as a memory (invalidate, delete)"))),
    section("Evidence",
      obs.evidence.length
        ? h("ol", { class: "evidence" }, obs.evidence.map((e) => h("li", { class: e.active ? "" : "inactive" },
            h("q", { dir: "auto" }, e.quote), " ",
            badge(e.stance, e.stance === "supports" ? "good" : "warn"), e.active ? null : [" ", badge("source invalidated", "bad")],
            h("div", { class: "muted small" }, when(e.at), " · source ", h("span", { class: "mono" }, e.source), " · ",
              link(route("b", bank, "m", e.memory_id), "the memory")))))
        : empty("No evidence.")),
    section("History",
      history.length
        ? table(["Version", "Action", "Text", "Reason", "Proof", "Recorded"], history.slice().reverse().map((v) => h("tr", {},
            h("td", { class: "num" }, `v${v.version}`),
            h("td", {}, badge(v.action)),
            h("td", { dir: "auto" }, v.text),
            h("td", {}, v.reason || h("span", { class: "muted" }, "—")),
            h("td", { class: "num" }, v.proof_count),
            h("td", {}, when(v.recorded_at)))))
        : empty("No history.")));
}
