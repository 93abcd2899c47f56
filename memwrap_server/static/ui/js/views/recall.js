// The recall debugger: the block exactly as the model sees it, and for every candidate its rank in each arm,
// its fused score and whether it fit the budget.

import { api, bankPath } from "../api.js";
import { badge, empty, field, h, link, notice, route, section, table, truncate, typeBadge } from "../dom.js";
import { TYPES } from "./memories.js";
import { splitTags } from "./memory_fields.js";

const ARMS = ["semantic", "keyword", "graph", "temporal"];

export async function recallView({ bank, query, navigate }) {
  const q = query.get("q") || "";
  const budget = parseInt(query.get("budget") || "512", 10) || 512;
  const types = query.getAll("type");
  const tags = query.get("tags") || "";
  const now = query.get("now") || "";
  const prefer = query.get("prefer") || "";
  const neighbours = query.get("neighbours") || "";

  const form = recallForm(bank, { q, budget, types, tags, now, prefer, neighbours }, navigate);
  const head = h("div", { class: "page-head" }, h("h1", {}, "Recall debugger"),
    h("p", { class: "muted" }, "What a wrapped client would inject for this query, and why each memory made it or not."));
  if (!q) return h("div", {}, head, form, empty("Type a query and a token budget, then run the recall."));

  const body = { query: q, token_budget: budget, explain: true };
  if (types.length) body.types = types;
  if (tags.trim()) body.tags = splitTags(tags);
  if (now) body.now = new Date(now).toISOString();
  if (prefer) body.prefer_observations = prefer === "yes";
  if (neighbours) body.neighbours = neighbours === "yes";
  const result = await api("POST", bankPath(bank, "recall"), { body });
  return h("div", {}, head, form, summary(result), results(bank, result));
}

function recallForm(bank, v, navigate) {
  const queryInput = h("textarea", { name: "q", rows: 2, required: true, placeholder: "e.g. What did I do last spring?" }, v.q);
  const budget = h("input", { type: "number", name: "budget", min: 1, max: 2000000, step: 1, value: v.budget, inputmode: "numeric" });
  const slider = h("input", { type: "range", min: 64, max: 4096, step: 32, value: Math.min(v.budget, 4096), "aria-label": "Token budget slider" });
  slider.addEventListener("input", () => { budget.value = slider.value; });
  budget.addEventListener("input", () => { slider.value = budget.value; });
  const select = (name, value, options) => h("select", { name }, options.map(([val, label]) => h("option", { value: val, selected: val === value }, label)));
  const form = h("form", { class: "filters recall-form" },
    h("div", { class: "field wide" }, h("label", { for: "recall-q" }, "Query"), Object.assign(queryInput, { id: "recall-q" })),
    h("div", { class: "field" }, h("label", { for: "recall-budget" }, "Token budget"), Object.assign(budget, { id: "recall-budget" }), slider),
    h("fieldset", { class: "field" }, h("legend", {}, "Types"), h("div", { class: "checks" }, TYPES.map((t) =>
      h("label", { class: "check" }, h("input", { type: "checkbox", name: "type", value: t, checked: v.types.includes(t) }), " ", t)))),
    field("Tags", h("input", { type: "text", name: "tags", value: v.tags, placeholder: "comma-separated" })),
    field("Now", h("input", { type: "datetime-local", name: "now", value: v.now }), "resolves “last spring”"),
    field("Prefer observations", select("prefer", v.prefer, [["", "server default"], ["yes", "yes"], ["no", "no"]])),
    field("Neighbours", select("neighbours", v.neighbours, [["", "server default"], ["yes", "yes"], ["no", "no"]])),
    h("div", { class: "field actions" }, h("button", { type: "submit", id: "run-recall" }, "Run recall")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const [k, val] of new FormData(form)) if (String(val).trim()) params.append(k, String(val).trim());
    navigate(`#/b/${encodeURIComponent(bank)}/recall?${params}`);
  });
  return form;
}

function summary(result) {
  const considered = result.considered || [];
  const fit = considered.filter((m) => m.fit).length;
  const share = result.token_budget ? Math.min(100, (100 * result.tokens) / result.token_budget) : 0;
  const timings = Object.entries(result.timings_ms || {}).map(([k, ms]) => `${k} ${ms.toFixed(1)} ms`).join(" · ");
  return h("div", { class: "stats-row", id: "recall-summary" },
    h("div", { class: "stat" }, h("div", { class: "stat-label" }, "Block size"),
      h("div", { class: "stat-value" }, `${result.tokens} / ${result.token_budget}`, h("small", {}, " tokens")),
      h("div", { class: "meter", role: "meter", "aria-valuenow": result.tokens, "aria-valuemin": 0, "aria-valuemax": result.token_budget, "aria-label": "Budget used" },
        meterFill(share)),
      h("small", { class: "muted" }, `encoding ${result.encoding}`)),
    h("div", { class: "stat" }, h("div", { class: "stat-label" }, "In the block"),
      h("div", { class: "stat-value" }, `${fit}`, h("small", {}, ` of ${considered.length} candidates`))),
    h("div", { class: "stat" }, h("div", { class: "stat-label" }, "Time window"),
      h("div", { class: "stat-value small" }, result.time_window
        ? [h("q", {}, result.time_window.expression), " → ", result.time_window.start.slice(0, 10), " … ", result.time_window.end.slice(0, 10)]
        : h("span", { class: "muted" }, "none (no temporal arm)"))),
    h("div", { class: "stat" }, h("div", { class: "stat-label" }, "Timings"), h("div", { class: "small" }, timings || "—")));
}

function results(bank, result) {
  const considered = result.considered || [];
  const byLine = new Map(considered.filter((m) => m.fit).map((m) => [m.line, m]));
  const lines = result.context ? result.context.split(/(?<=\n)/) : [];
  const block = h("pre", { class: "block", id: "injected-block", tabindex: 0, "aria-label": "Injected block" },
    lines.map((line) => {
      const memory = byLine.get(line);
      return h("span", { class: memory ? "line mem" : "line frame", "data-id": memory ? memory.id : null }, line);
    }));
  const copy = h("button", { type: "button", class: "ghost small", onclick: async () => {
    await navigator.clipboard.writeText(result.context).catch(() => null);
    copy.textContent = "Copied";
  } }, "Copy block");

  let showing = "all";
  const rows = considered.map((m) => candidateRow(bank, m));
  const tbody = table(["#", "Fit", "Fused score", ...ARMS.map((a) => a[0].toUpperCase() + a.slice(1)), "Tokens", "Budget left", "Memory"], rows, { class: "candidates", id: "candidates" });
  const filter = h("div", { class: "segmented", role: "group", "aria-label": "Which candidates" },
    ["all", "in", "out"].map((which) => h("button", { type: "button", "aria-pressed": String(which === showing), onclick: (event) => {
      showing = which;
      for (const b of filter.children) b.setAttribute("aria-pressed", String(b === event.currentTarget));
      for (const row of rows) row.hidden = (which === "in" && row.dataset.fit !== "true") || (which === "out" && row.dataset.fit === "true");
    } }, { all: `All (${considered.length})`, in: `In the block (${considered.filter((m) => m.fit).length})`, out: `Left out (${considered.filter((m) => !m.fit).length})` }[which])));

  // A row and its line in the block light up together.
  const highlight = (id, on) => {
    for (const el of document.querySelectorAll(`[data-id="${CSS.escape(id)}"]`)) el.classList.toggle("lit", on);
  };
  for (const el of [...rows, ...block.querySelectorAll(".mem")]) {
    el.addEventListener("mouseenter", () => highlight(el.dataset.id, true));
    el.addEventListener("mouseleave", () => highlight(el.dataset.id, false));
  }
  for (const row of rows) {
    row.addEventListener("click", (event) => {
      if (event.target.closest("a")) return;
      const line = block.querySelector(`[data-id="${CSS.escape(row.dataset.id)}"]`);
      if (line) line.scrollIntoView({ block: "nearest", behavior: "smooth" });
    });
  }

  return h("div", { class: "debugger" },
    section("Injected block — exactly what the model sees",
      result.context ? [h("div", { class: "row end" }, copy), block] : notice("warn", "Nothing fit: the block is empty, so nothing is injected.")),
    section("Candidates, in ranking order",
      h("p", { class: "muted small" }, "Ranks are 1-based places in each arm's own list (— : the arm did not find it). Fusion: weighted reciprocal rank. ",
        "A candidate is left out when its line costs more than the budget left at its turn; later, shorter ones may still fit."),
      considered.length ? [filter, tbody] : empty("No candidate: the bank has no memory matching this query and these filters.")));
}

function candidateRow(bank, m) {
  return h("tr", { "data-id": m.id, "data-fit": String(m.fit), class: m.fit ? "fit" : "out" },
    h("td", { class: "num" }, m.rank),
    h("td", { class: "fit-cell" }, m.fit ? badge("in", "good") : h("span", { title: m.reason }, badge("out", "bad"),
      h("div", { class: "muted small nowrap" }, `${m.tokens} > ${m.budget_left} left`))),
    h("td", { class: "num mono", "data-col": "score" }, m.score.toFixed(4)),
    ARMS.map((arm) => {
      const rank = m.arms[arm];
      return h("td", { class: `num arm ${rank ? heat(rank) : "none"}`, "data-arm": arm }, rank ? String(rank) : "—");
    }),
    h("td", { class: "num" }, m.tokens),
    h("td", { class: "num muted" }, m.budget_left),
    h("td", { class: "memory-cell" }, typeBadge(m.type), " ", link(route("b", bank, "m", m.id), truncate(m.text, 200)),
      m.neighbour_of ? h("div", { class: "muted small" }, "neighbour of another hit (fills what is left)") : null));
}

function meterFill(percent) {
  const fill = h("span", {});
  fill.style.width = `${percent.toFixed(1)}%`; // through CSSOM: the page's CSP allows no inline style attribute
  return fill;
}

function heat(rank) {
  return rank <= 3 ? "h1" : rank <= 10 ? "h2" : rank <= 30 ? "h3" : "h4";
}
