import { api, bankPath } from "../api.js";
import { badge, empty, h, link, route, table, when } from "../dom.js";

const TYPES = ["raw", "world", "experience", "observation"];

export async function banksView() {
  const banks = await api("GET", "/v1/banks");
  const rows = banks.map((bank) => {
    const row = h("tr", { "data-bank": bank.bank_id },
      h("th", { scope: "row" }, link(route("b", bank.bank_id, "memories"), bank.bank_id)),
      h("td", { class: "num", "data-col": "memories" }, bank.memories.toLocaleString()),
      h("td", { class: "types", colspan: 6 }, h("span", { class: "muted" }, "…")),
      h("td", {}, when(bank.last_retain_at)));
    loadStats(bank.bank_id, row);
    return row;
  });
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Banks"),
      h("p", { class: "muted" }, banks.length === 1 ? "1 bank this key may use." : `${banks.length} banks this key may use.`)),
    banks.length
      ? table(["Bank", "Memories", "By type", "Observations", "Mental models", "Entities", "Jobs pending", "Invalidated", "Last activity"], rows, { class: "banks" })
      : empty("No bank yet. Retain something (POST /v1/banks/{bank_id}/memories, or a wrapped client) and it appears here."));
}

async function loadStats(bankId, row) {
  let stats;
  try {
    stats = await api("GET", bankPath(bankId, "stats"));
  } catch (error) {
    row.children[2].replaceChildren(h("span", { class: "muted" }, `counts unavailable (${error.message})`));
    return;
  }
  const types = h("span", { class: "type-counts" }, TYPES.filter((t) => stats.memories_by_type[t]).map((t) =>
    h("span", { class: "type-count" }, badge(t, `t-${t}`), " ", stats.memories_by_type[t].toLocaleString())));
  const cells = [
    h("td", { class: "types" }, types.children.length ? types : h("span", { class: "muted" }, "—")),
    h("td", { class: "num", "data-col": "observations" }, stats.observations.toLocaleString()),
    h("td", { class: "num", "data-col": "mental_models" }, link(route("b", bankId, "models"), stats.mental_models.toLocaleString())),
    h("td", { class: "num", "data-col": "entities" }, link(route("b", bankId, "entities"), stats.entities.toLocaleString())),
    h("td", { class: "num", "data-col": "jobs_pending" }, stats.jobs_pending
      ? link(route("b", bankId, "jobs"), badge(stats.jobs_pending.toLocaleString(), "warn"))
      : "0", stats.jobs_by_status.failed ? [" ", link(route("b", bankId, "jobs", { status: "failed" }), badge(`${stats.jobs_by_status.failed} failed`, "bad"))] : null),
    h("td", { class: "num", "data-col": "invalidated" }, stats.invalidated.toLocaleString()),
  ];
  row.children[1].textContent = stats.memories.toLocaleString();
  row.children[2].replaceWith(...cells);
  row.lastElementChild.replaceChildren(when(stats.last_activity_at));
}
