// A bank to a file and back: Export downloads the bank as JSON lines (GET .../export), Import sends such a file
// into this bank or another (POST .../import) and shows what was read and written. Both are the REST verbs
// export_bank and import_bank; importing the same file twice writes nothing the second time.

import { ApiError, bankPath, send } from "../api.js";
import { field, h, notice, route, section, table } from "../dom.js";

export async function transferView({ bank }) {
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Export and import"), h("p", { class: "muted" }, bank)),
    h("div", { class: "grid2" }, exportCard(bank), importCard(bank)));
}

function exportCard(bank) {
  const vectors = h("input", { type: "checkbox", id: "export-vectors", checked: true });
  const status = h("div", { class: "action-status", id: "export-status", "aria-live": "polite" });
  const button = h("button", { type: "button", id: "export" }, "Export this bank");
  button.addEventListener("click", async () => {
    button.disabled = true;
    status.replaceChildren(h("span", { class: "muted" }, "Exporting…"));
    try {
      const response = await send("GET", bankPath(bank, "export"), {
        query: { include_embeddings: vectors.checked ? "true" : "false" }, accept: "application/x-ndjson",
      });
      const blob = await response.blob();
      const lines = (await blob.text()).split("\n").filter(Boolean).length;
      const url = URL.createObjectURL(blob);
      const name = `${bank}.jsonl`;
      const save = h("a", { href: url, download: name, id: "export-file" }, `Save ${name} again`);
      document.body.append(save);
      save.click();
      status.replaceChildren(notice("ok", `Exported ${lines.toLocaleString()} records (${formatBytes(blob.size)}) as ${name}. `, save));
    } catch (error) {
      status.replaceChildren(notice("error", h("strong", {}, "Export failed. "), error instanceof ApiError ? error.message : String(error)));
    } finally {
      button.disabled = false;
    }
  });
  return section("Export",
    h("p", {}, "The whole bank as JSON lines: memories with their times, metadata, tags, entities and links; observations, mental models, histories."),
    h("label", { class: "check" }, vectors, " Include the vectors (a bigger file; an import with the same model need not embed again)"),
    h("div", { class: "row actions" }, button), status);
}

function importCard(bank) {
  const file = h("input", { type: "file", id: "import-file", accept: ".jsonl,.ndjson,.json,application/x-ndjson" });
  const target = h("input", { type: "text", id: "import-bank", value: bank, spellcheck: "false" });
  const status = h("div", { class: "action-status", id: "import-status", "aria-live": "polite" });
  const button = h("button", { type: "submit", id: "import" }, "Import");
  const form = h("form", { class: "import" },
    field("File (JSON lines, as Export writes them)", file),
    field("Into bank (created if needed)", target),
    h("div", { class: "row actions" }, button), status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = file.files && file.files[0];
    const into = target.value.trim();
    if (!chosen) return status.replaceChildren(notice("error", "Choose a file to import."));
    if (!into) return status.replaceChildren(notice("error", "Name the bank to import into."));
    button.disabled = true;
    status.replaceChildren(h("span", { class: "muted" }, `Importing ${chosen.name}…`));
    try {
      const response = await send("POST", bankPath(into, "import"), { body: chosen, type: "application/x-ndjson" });
      const report = await response.json();
      const kinds = [...new Set([...Object.keys(report.read), ...Object.keys(report.written)])].sort();
      const written = Object.values(report.written).reduce((a, b) => a + b, 0);
      status.replaceChildren(
        notice("ok", `Imported ${chosen.name} into ${report.bank_id}: ${written.toLocaleString()} rows written`,
          report.embedded ? `, ${report.embedded.toLocaleString()} memories embedded` : "", ". ",
          h("a", { href: route("b", report.bank_id, "memories") }, "See its memories")),
        table(["Kind", "Read", "Written"], kinds.map((k) => h("tr", { "data-kind": k },
          h("td", {}, k), h("td", { class: "num" }, (report.read[k] || 0).toLocaleString()),
          h("td", { class: "num" }, (report.written[k] || 0).toLocaleString()))), { class: "import-report" }));
    } catch (error) {
      status.replaceChildren(notice("error", h("strong", {}, "Import failed. "), error instanceof ApiError ? error.message : String(error)));
    } finally {
      button.disabled = false;
    }
  });
  return section("Import", h("p", {}, "Rows already in the bank are skipped, so importing the same file twice writes nothing the second time."), form);
}

function formatBytes(n) {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}
