import { ApiError, api, bankPath } from "../api.js";
import { badge, empty, field, h, link, notice, route, section, table, truncate, typeBadge, when } from "../dom.js";
import { bulkBar, pageBox, rowBox, takeResult } from "./bulk.js";
import { FilterError, buildFilter, metadataFields } from "./metadata_filter.js";
import { splitTags } from "./memory_fields.js";
import { sessionOf } from "./sessions.js";

export const TYPES = ["raw", "world", "experience", "observation"];
const PAGE = 50;

export async function memoriesView({ bank, query, navigate }) {
  const q = query.get("q") || "";
  const types = query.getAll("type");
  const tag = query.get("tag") || "";
  const doc = query.get("doc") || "";
  const since = query.get("since") || "";
  const until = query.get("until") || "";
  const offset = Math.max(0, parseInt(query.get("offset") || "0", 10) || 0);
  const expired = query.get("expired") === "1";
  const meta = { key: (query.get("mk") || "").trim(), value: query.get("mv") || "", json: (query.get("mf") || "").trim() };
  // Days of the user's calendar, as the API's time filter on when a memory was said: `until` includes its day.
  const dates = since || until ? {
    mentioned_after: since ? new Date(`${since}T00:00:00`).toISOString() : undefined,
    mentioned_before: until ? new Date(new Date(`${until}T00:00:00`).getTime() + 86_400_000 - 1).toISOString() : undefined,
  } : null;

  const form = filterForm(bank, { q, types, tag, doc, since, until, meta, expired }, navigate);
  const head = h("div", { class: "page-head" }, h("h1", {}, "Memories"), h("p", { class: "muted" }, bank),
    h("a", { class: "button", id: "add-memory", href: route("b", bank, "new") }, "Add a memory…"));
  let filter;
  try {
    filter = buildFilter(meta, dates);
  } catch (error) {
    if (!(error instanceof FilterError)) throw error;
    return h("div", {}, head, form, notice("error", h("strong", {}, "Filter not applied. "), error.message));
  }
  const filters = filter ? JSON.stringify(filter) : null;
  try {
    // The bank's instructions and the memories are independent reads: both at once.
    const [card, body] = await Promise.all([instructions(bank),
      listOrSearch({ bank, q, types, tag, doc, since, until, meta, expired, offset, filters, navigate })]);
    return h("div", {}, head, card, form, takeResult(), body);
  } catch (error) {
    // The server refused the filter (422: an unknown operator, a bad key): say so, with the form kept to fix it.
    if (error instanceof ApiError && error.status === 422 && (filter || tag || doc)) {
      return h("div", {}, head, form, notice("error", h("strong", {}, "The server refused this filter. "), error.message));
    }
    throw error;
  }
}

async function listOrSearch({ bank, q, types, tag, doc, since, until, meta, expired, offset, filters, navigate }) {
  let body;
  if (q) {
    const result = await api("POST", bankPath(bank, "recall"), {
      body: { query: q, token_budget: 4000, types: types.length ? types : null, tags: tag ? splitTags(tag) : null, explain: true,
        filters: filters ? JSON.parse(filters) : null },
    });
    const considered = result.considered || [];
    body = h("div", {},
      h("p", { class: "muted" }, `${considered.length} memories found by recall for this search, best first. `,
        link(route("b", bank, "recall", { q }), "Open this query in the recall debugger"), "."),
      considered.length
        ? table(["#", "Memory", "Type", "Score", "Said"], considered.map((m) => h("tr", { "data-id": m.id },
            h("td", { class: "num" }, m.rank),
            h("td", {}, link(route("b", bank, "m", m.id), truncate(m.text, 240))),
            h("td", {}, typeBadge(m.type)),
            h("td", { class: "num" }, m.score.toFixed(4)),
            h("td", {}, when(m.mentioned_at)))), { class: "memories" })
        : empty("Nothing matched."));
  } else {
    const page = await api("GET", bankPath(bank, "memories"), {
      query: { limit: PAGE, offset, types, tags: tag || null, document_id: doc || null, filters, include_expired: expired || null },
    });
    const here = (o) => route("b", bank, "memories", { type: types, tag, doc, since, until, mk: meta.key, mv: meta.value, mf: meta.json, expired: expired ? "1" : null, offset: o || null });
    const listed = page.items.length
      ? table([pageBox(), "Memory", "Type", "Said", "Tags", "Document"], page.items.map((m) => h("tr", { "data-id": m.id },
          rowBox(m.id),
          h("td", {}, link(route("b", bank, "m", m.id), truncate(m.text, 240))),
          h("td", {}, typeBadge(m.type), expiry(m.expires_at)),
          h("td", {}, when(m.mentioned_at)),
          h("td", {}, m.tags.map((t) => h("span", { class: "tag" }, t))),
          h("td", { class: "mono small" }, m.document_id ? link(route("b", bank, "memories", { doc: m.document_id }), truncate(m.document_id, 40)) : "—",
            sessionOf(m) ? [" ", link(route("b", bank, "s", sessionOf(m)), h("span", { class: "small" }, "thread"))] : null))), { class: "memories" })
      : null;
    body = h("div", {},
      listed ? bulkBar(bank, listed, () => navigate(location.hash)) : null,
      listed || empty(offset ? "No more memories." : "No memory matches these filters."),
      h("nav", { class: "pager", "aria-label": "Pages" },
        offset > 0 ? link(here(Math.max(0, offset - PAGE)), "← Previous") : h("span", {}),
        h("span", { class: "muted" }, page.items.length ? `${offset + 1}–${offset + page.items.length}, oldest first` : ""),
        page.next_offset !== null ? link(here(page.next_offset), "Next →") : h("span", {})));
  }
  return body;
}

// The bank's extraction instructions (configure_bank extraction_instructions): what its LLM keeps and ignores.
async function instructions(bank) {
  let config = {};
  try {
    config = (await api("GET", bankPath(bank))).config || {};
  } catch {
    return null;  // the memories are shown all the same
  }
  const text = config.extraction_instructions;
  if (!text) return null;
  return h("div", { class: "extraction-instructions" }, section("Extraction instructions",
    h("p", { class: "pre-wrap" }, text),
    h("p", { class: "muted small" }, "Given to LLM extraction and consolidation. Without an LLM they are kept, and nothing reads them.")));
}

function expiry(at) {
  if (!at) return null;
  const past = new Date(at).getTime() <= Date.now();
  return h("span", { title: `expires ${at}` }, " ", badge(past ? "expired" : "expires", past ? "bad" : "warn"), " ", when(at));
}

function filterForm(bank, values, navigate) {
  const search = h("input", { type: "search", name: "q", value: values.q, placeholder: "What are you looking for? (uses recall)" });
  const tag = h("input", { type: "text", name: "tag", value: values.tag, placeholder: "a tag" });
  const doc = h("input", { type: "text", name: "doc", value: values.doc, placeholder: "document or session id" });
  const since = h("input", { type: "date", name: "since", value: values.since, "aria-label": "Said on or after" });
  const until = h("input", { type: "date", name: "until", value: values.until, "aria-label": "Said on or before" });
  const boxes = TYPES.map((t) => h("label", { class: "check" },
    h("input", { type: "checkbox", name: "type", value: t, checked: values.types.includes(t) }), " ", t));
  const form = h("form", { class: "filters", role: "search" },
    field("Search", search),
    h("fieldset", { class: "field" }, h("legend", {}, "Types"), h("div", { class: "checks" }, boxes)),
    field("Tag", tag),
    field("Document", doc, "list only (search ranks across documents)"),
    h("fieldset", { class: "field" }, h("legend", {}, "Said between"), h("div", { class: "row" }, since, " and ", until)),
    metadataFields(values.meta),
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "expired", value: "1", checked: values.expired }), " include expired"),
    h("div", { class: "field actions" }, h("button", { type: "submit" }, "Apply"),
      link(route("b", bank, "memories"), "Clear")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const params = new URLSearchParams();
    for (const [k, v] of data) if (String(v).trim()) params.append(k, String(v).trim());
    navigate(`#/b/${encodeURIComponent(bank)}/memories${[...params].length ? "?" + params : ""}`);
  });
  return form;
}
