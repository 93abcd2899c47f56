// Conversations: the bank's sessions, and one session as a thread — its memories in the order they were
// retained, each under the label of who said it (the memory's `speaker`).

import { api, bankPath } from "../api.js";
import { badge, empty, h, link, route, table, typeBadge, when } from "../dom.js";

const PAGE = 100;
const THREAD_PAGE = 200;

// A memory's session, as the engine reads it (memwrap/engine/retain/prepare.py, session_key): metadata
// session_id, else the document id before its last colon, else the document id.
export function sessionOf(memory) {
  const explicit = memory.metadata && memory.metadata.session_id;
  if (explicit) return String(explicit);
  const doc = memory.document_id;
  if (!doc) return null;
  return doc.includes(":") ? doc.slice(0, doc.lastIndexOf(":")) : doc;
}

export async function sessionsView({ bank, query }) {
  const offset = Math.max(0, parseInt(query.get("offset") || "0", 10) || 0);
  const sessions = await api("GET", bankPath(bank, "sessions"), { query: { limit: PAGE, offset } });
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Sessions"), h("p", { class: "muted" }, bank)),
    sessions.length
      ? table(["Session", "Memories", "Speakers", "First said", "Last said"], sessions.map((s) => h("tr", { "data-session": s.session_id },
          h("th", { scope: "row", class: "mono" }, link(route("b", bank, "s", s.session_id), s.session_id)),
          h("td", { class: "num" }, s.memories.toLocaleString()),
          h("td", {}, s.speakers.length ? s.speakers.map((name) => h("span", { class: "tag" }, name)) : h("span", { class: "muted" }, "—")),
          h("td", {}, when(s.first_said_at)),
          h("td", {}, when(s.last_said_at)))), { class: "sessions" })
      : empty(offset ? "No more sessions." : "No session yet: memories retained with a document id \"session:part\" (as wrapped clients do) or a metadata session_id appear here."),
    h("nav", { class: "pager", "aria-label": "Pages" },
      offset > 0 ? link(route("b", bank, "sessions", { offset: Math.max(0, offset - PAGE) || null }), "← Previous") : h("span", {}),
      h("span", {}),
      sessions.length === PAGE ? link(route("b", bank, "sessions", { offset: offset + PAGE }), "Next →") : h("span", {})));
}

export async function sessionView({ bank, params, query }) {
  const session = params[1];
  const offset = Math.max(0, parseInt(query.get("offset") || "0", 10) || 0);
  const turnsOnly = query.get("turns") === "1";
  const page = await api("GET", bankPath(bank, "memories"), {
    query: {
      limit: THREAD_PAGE, offset, types: turnsOnly ? ["raw"] : null,
      filters: JSON.stringify({ session_ids: [session] }),
    },
  });
  const here = (extra) => route("b", bank, "s", session, { turns: turnsOnly ? "1" : null, ...extra });
  const items = page.items;
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Session ", h("span", { class: "mono" }, session)),
      link(route("b", bank, "sessions"), "← all sessions")),
    h("div", { class: "row thread-tools" },
      h("span", { class: "muted" }, items.length ? `${offset + 1}–${offset + items.length}, in the order they were retained` : ""),
      turnsOnly
        ? link(route("b", bank, "s", session), "Show extracted facts too")
        : link(route("b", bank, "s", session, { turns: "1" }), "Only the turns (raw)")),
    items.length
      ? h("ol", { class: "thread", start: offset + 1 }, items.map((m) => h("li", {
          class: `turn ${speakerClass(m.speaker)}`, "data-id": m.id, "data-speaker": m.speaker || "" },
          h("div", { class: "turn-head" },
            h("strong", { class: "speaker" }, m.speaker || "—"), " ",
            when(m.mentioned_at), " ", m.type === "raw" ? null : typeBadge(m.type),
            m.document_id ? h("span", { class: "muted small mono" }, " ", m.document_id) : null),
          h("div", { class: "turn-text", dir: "auto" }, link(route("b", bank, "m", m.id), m.text)))))
      : empty(offset ? "No more memories in this session." : "No memory of this session (or all of them were invalidated)."),
    h("nav", { class: "pager", "aria-label": "Pages" },
      offset > 0 ? link(here({ offset: Math.max(0, offset - THREAD_PAGE) || null }), "← Earlier") : h("span", {}),
      h("span", {}),
      page.next_offset !== null ? link(here({ offset: page.next_offset }), "Later →") : h("span", {})),
    items.some((m) => m.speaker) ? null : h("p", { class: "muted small" }, badge("note"), " No speaker is known for these memories (they were not retained as labelled turns)."));
}

function speakerClass(speaker) {
  const who = (speaker || "").toLowerCase();
  if (who === "user") return "by-user";
  if (who === "assistant") return "by-assistant";
  return who ? "by-other" : "by-nobody";
}
