// A memory written by hand: the retain verb (POST .../memories) with the fields an operator can know — the
// text, tags, metadata, when it was said, its document or session, a context. With an LLM configured, retain
// may turn one text into several facts: the page lists what was stored.

import { ApiError, api, bankPath } from "../api.js";
import { field, h, link, notice, route, section } from "../dom.js";
import { parseMetadata, splitTags } from "./memory_fields.js";

export async function addMemoryView({ bank, navigate }) {
  const text = h("textarea", { name: "content", id: "new-text", rows: 4, dir: "auto", required: true, placeholder: "Alice's new phone number ends in 42." });
  const tags = h("input", { type: "text", name: "tags", id: "new-tags", placeholder: "comma-separated: work, phone" });
  const metadata = h("textarea", { name: "metadata", id: "new-metadata", rows: 3, class: "mono", spellcheck: "false", placeholder: '{"source": "operator"}' });
  const said = h("input", { type: "datetime-local", name: "timestamp", id: "new-said", step: 1 });
  const doc = h("input", { type: "text", name: "document_id", id: "new-doc", spellcheck: "false", placeholder: "session:part, e.g. chat-7:turn-3" });
  const context = h("input", { type: "text", name: "context", id: "new-context", placeholder: "where it comes from (optional)" });
  const status = h("div", { class: "action-status", id: "new-status", "aria-live": "polite" });
  const form = h("form", { class: "card new-memory", "aria-label": "Add a memory" },
    field("Text", text),
    h("div", { class: "grid2" }, field("Tags", tags), field("Said at (your time; empty: now)", said)),
    h("div", { class: "grid2" }, field("Document or session", doc), field("Context", context)),
    field("Metadata (JSON object)", metadata),
    h("div", { class: "row actions" }, h("button", { type: "submit", id: "new-save" }, "Retain"),
      link(route("b", bank, "memories"), "Cancel")),
    status);
  form.addEventListener("input", () => status.replaceChildren()); // an error said is about what was there
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const item = { content: text.value };
    if (!text.value.trim()) return status.replaceChildren(notice("error", "Write the memory's text."));
    const tagList = splitTags(tags.value);
    if (tagList.length) item.tags = tagList;
    const meta = parseMetadata(metadata.value);
    if (meta.error) return status.replaceChildren(notice("error", meta.error));
    if (Object.keys(meta.value).length) item.metadata = meta.value;
    if (said.value) item.timestamp = new Date(said.value).toISOString();
    if (doc.value.trim()) item.document_id = doc.value.trim();
    if (context.value.trim()) item.context = context.value.trim();
    status.replaceChildren(h("span", { class: "muted" }, "Retaining…"));
    try {
      const { ids } = await api("POST", bankPath(bank, "memories"), { body: item });
      if (ids.length === 1) return navigate(route("b", bank, "m", ids[0]));
      status.replaceChildren(ids.length
        ? notice("ok", `Stored as ${ids.length} memories: `, ids.map((id, i) => [i ? ", " : "", link(route("b", bank, "m", id), `#${i + 1}`)]))
        : notice("ok", "Nothing new was stored (the same item was retained before, or nothing in it was worth keeping)."));
    } catch (error) {
      status.replaceChildren(notice("error", h("strong", {}, "Not retained. "), error instanceof ApiError ? error.message : String(error)));
    }
  });
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Add a memory"), h("p", { class: "muted" }, bank),
      link(route("b", bank, "memories"), "← all memories")),
    form,
    section("What happens", h("p", { class: "muted" },
      "The text is retained as any client's would be: the bank's secret policy applies, its dates are read, and with an LLM configured it may be split into facts. Recall finds it at once.")));
}
