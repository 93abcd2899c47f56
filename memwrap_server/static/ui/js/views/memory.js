import { api, bankPath } from "../api.js";
import { badge, empty, field, h, link, notice, route, section, table, typeBadge, when } from "../dom.js";
import { localInput, splitTags } from "./memory_fields.js";
import { sessionOf } from "./sessions.js";

export async function memoryView({ bank, params, navigate, errorView }) {
  const id = params[1];
  const [memory, context, versions] = await Promise.all([
    api("GET", bankPath(bank, "memories", id)),
    api("GET", bankPath(bank, "memories", id, "context")),
    api("GET", bankPath(bank, "memories", id, "history")),
  ]);
  const status = h("div", { class: "action-status", "aria-live": "polite" });
  const act = async (label, fn, after) => {
    status.replaceChildren(h("span", { class: "muted" }, `${label}…`));
    try {
      await fn();
      after();
    } catch (error) {
      status.replaceChildren(errorView(error, bank));
    }
  };
  const invalidated = Boolean(context.invalidated_at);
  const editor = editForm(memory, (changes) => act("Saving", () => api("PATCH", bankPath(bank, "memories", id), { body: changes }), () => navigate(location.hash)), status);
  const actions = h("div", { class: "row actions" },
    h("button", { type: "button", id: "edit", "aria-expanded": "false", onclick: (event) => {
      editor.hidden = !editor.hidden;
      event.currentTarget.setAttribute("aria-expanded", String(!editor.hidden));
      if (!editor.hidden) editor.querySelector("textarea").focus();
    } }, "Edit…"),
    invalidated
      ? h("button", { type: "button", id: "restore", onclick: () => act("Restoring", () => api("POST", bankPath(bank, "memories", id, "restore")), () => navigate(location.hash)) }, "Restore")
      : h("button", { type: "button", id: "invalidate", onclick: () => {
          const reason = prompt("Why is this memory wrong? (kept with it; restore undoes this)", "");
          if (reason === null) return;
          act("Invalidating", () => api("POST", bankPath(bank, "memories", id, "invalidate"), { body: { reason } }), () => navigate(location.hash));
        } }, "Invalidate…"),
    h("button", { type: "button", id: "delete", class: "danger", onclick: () => {
      if (!confirm("Delete this memory for good? What was learnt from it forgets it too. This cannot be undone.")) return;
      act("Deleting", () => api("DELETE", bankPath(bank, "memories", id)), () => navigate(route("b", bank, "memories")));
    } }, "Delete…"),
    status);

  const facts = h("dl", { class: "facts" },
    dt("Type"), h("dd", {}, typeBadge(memory.type)),
    dt("Said (mentioned)"), h("dd", {}, when(memory.mentioned_at)),
    dt("Happened (occurred)"), h("dd", {}, memory.occurred_start ? [when(memory.occurred_start), memory.occurred_end && memory.occurred_end !== memory.occurred_start ? [" … ", when(memory.occurred_end)] : null] : h("span", { class: "muted" }, "—")),
    dt("Stored"), h("dd", {}, when(memory.created_at)),
    dt("Document"), h("dd", { class: "mono" }, memory.document_id ? link(route("b", bank, "memories", { doc: memory.document_id }), memory.document_id) : "—"),
    dt("Session"), h("dd", {}, sessionOf(memory) ? link(route("b", bank, "s", sessionOf(memory)), h("span", { class: "mono" }, sessionOf(memory)), " (thread)") : "—"),
    dt("Speaker"), h("dd", {}, memory.speaker || h("span", { class: "muted" }, "—")),
    dt("Tags"), h("dd", {}, memory.tags.length ? memory.tags.map((t) => h("span", { class: "tag" }, t)) : "—"),
    dt("Entities"), h("dd", {}, context.entities.length ? context.entities.map((e) => link(route("b", bank, "e", e.id), h("span", { class: "tag entity" }, e.name))) : "—"),
    dt("Id"), h("dd", { class: "mono small" }, memory.id));

  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Memory"), link(route("b", bank, "memories"), "← all memories")),
    invalidated ? notice("warn", h("strong", {}, "Invalidated "), when(context.invalidated_at),
      context.invalidation_reason ? [": ", h("q", {}, context.invalidation_reason)] : null,
      ". Recall does not see it; what was learnt from it no longer counts it.") : null,
    h("section", { class: "card" },
      h("blockquote", { class: "memory-text", lang: "", dir: "auto" }, memory.text),
      memory.context ? h("p", { class: "muted" }, "Context: ", memory.context) : null,
      actions, editor),
    h("div", { class: "grid2" },
      section("Details", facts),
      section("Metadata", Object.keys(memory.metadata).length ? h("pre", { class: "json" }, JSON.stringify(memory.metadata, null, 2)) : empty("No metadata."))),
    section("Observations citing it",
      context.observations.length
        ? table(["Observation", "Quote", "Stance", "Proof"], context.observations.map((o) => h("tr", {},
            h("td", {}, link(route("b", bank, "o", o.id), o.text), o.invalidated ? [" ", badge("invalidated", "bad")] : null),
            h("td", {}, h("q", {}, o.quote)),
            h("td", {}, badge(o.stance, o.stance === "supports" ? "good" : "warn")),
            h("td", { class: "num" }, o.proof_count))))
        : empty("No observation cites this memory (yet: the worker consolidates new facts in the background).")),
    section("Versions",
      versions.length > 1
        ? table(["Version", "Text", "Changed", "From", "Until"], versions.slice().reverse().map((v) => h("tr", { "data-version": v.version },
            h("td", { class: "num" }, `v${v.version}`, v.current ? [" ", badge("current", "good")] : null),
            h("td", { dir: "auto" }, v.text),
            h("td", {}, v.changed.length ? v.changed.map((f) => h("span", { class: "tag" }, f)) : h("span", { class: "muted" }, "first")),
            h("td", {}, when(v.valid_from)), h("td", {}, v.valid_until ? when(v.valid_until) : h("span", { class: "muted" }, "now")))))
        : empty("Never edited: this is the only version.")),
    section("Links",
      context.links.length
        ? table(["Direction", "Kind", "Memory"], context.links.map((l) => h("tr", {},
            h("td", {}, l.direction === "out" ? "→ to" : "← from"),
            h("td", {}, badge(l.kind)),
            h("td", {}, typeBadge(l.type), " ", link(route("b", bank, "m", l.id), l.text), l.invalidated ? [" ", badge("invalidated", "bad")] : null))))
        : empty("No links.")));
}

// Text, tags and metadata, changed in place (the old version stays in the history). Only what changed is sent:
// new text is re-embedded and re-dated, so an unchanged text is not sent back.
function editForm(memory, save, status) {
  const text = h("textarea", { name: "text", rows: 4, dir: "auto", required: true }, memory.text);
  const tags = h("input", { type: "text", name: "tags", value: memory.tags.join(", "), placeholder: "comma-separated" });
  const metadata = h("textarea", { name: "metadata", rows: 4, class: "mono", spellcheck: "false" }, JSON.stringify(memory.metadata, null, 2));
  // When what it says happened, in the browser's time zone (sent as UTC); empty end: the same as the start.
  const start = h("input", { type: "datetime-local", name: "occurred_start", step: 1, value: localInput(memory.occurred_start) });
  const end = h("input", { type: "datetime-local", name: "occurred_end", step: 1,
    value: memory.occurred_end && memory.occurred_end !== memory.occurred_start ? localInput(memory.occurred_end) : "" });
  const form = h("form", { class: "card edit", hidden: true, "aria-label": "Edit this memory" },
    field("Text", text), field("Tags", tags), field("Metadata (JSON object)", metadata),
    h("fieldset", { class: "field" }, h("legend", {}, "Happened (occurred) from … to (optional)"), h("div", { class: "row" }, start, " … ", end)),
    h("div", { class: "row actions" }, h("button", { type: "submit" }, "Save"), h("span", { class: "muted small" }, "The old version is kept in the history.")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const changes = {};
    if (text.value.trim() && text.value !== memory.text) changes.text = text.value;
    const newTags = splitTags(tags.value);
    if (newTags.join("\u0000") !== memory.tags.join("\u0000")) changes.tags = newTags;
    let parsed;
    try {
      parsed = JSON.parse(metadata.value.trim() || "{}");
    } catch (error) {
      status.replaceChildren(h("span", { class: "bad-text" }, `Metadata is not valid JSON: ${error.message}`));
      return;
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      status.replaceChildren(h("span", { class: "bad-text" }, "Metadata must be a JSON object ({…})."));
      return;
    }
    if (JSON.stringify(parsed) !== JSON.stringify(memory.metadata)) changes.metadata = parsed;
    const was = [localInput(memory.occurred_start), memory.occurred_end && memory.occurred_end !== memory.occurred_start ? localInput(memory.occurred_end) : ""];
    if (start.value !== was[0] || end.value !== was[1]) {
      if (!start.value) {
        status.replaceChildren(h("span", { class: "bad-text" }, "Give when it started happening (the end alone is not enough)."));
        return;
      }
      changes.occurred_start = new Date(start.value).toISOString();
      if (end.value) changes.occurred_end = new Date(end.value).toISOString();
    }
    if (!Object.keys(changes).length) {
      status.replaceChildren(h("span", { class: "muted" }, "Nothing changed."));
      return;
    }
    save(changes);
  });
  return form;
}

function dt(text) {
  return h("dt", {}, text);
}
