import { api, bankPath } from "../api.js";
import { badge, empty, h, section, table, when } from "../dom.js";

const STATUS = { fresh: "good", pending: "info", stale: "warn", failed: "bad" };

export async function modelsView({ bank, navigate, errorView }) {
  const models = await api("GET", bankPath(bank, "mental-models"));
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Mental models"),
      h("p", { class: "muted" }, "Standing questions the worker answers from memory and keeps fresh.")),
    models.length ? models.map((m) => modelCard(bank, m, navigate, errorView))
      : empty("No mental model. Create one with POST /v1/banks/{bank_id}/mental-models."));
}

function modelCard(bank, m, navigate, errorView) {
  const status = h("div", { class: "action-status", "aria-live": "polite" });
  const historyBox = h("div", {});
  const refresh = h("button", { type: "button", class: "refresh", onclick: async () => {
    refresh.disabled = true;
    status.replaceChildren(h("span", { class: "muted" }, "Refreshing (the LLM answers the question again)…"));
    try {
      await api("POST", bankPath(bank, "mental-models", m.name, "refresh"));
      navigate(location.hash);
    } catch (error) {
      status.replaceChildren(errorView(error, bank));
      refresh.disabled = false;
    }
  } }, "Refresh now");
  const showHistory = h("button", { type: "button", class: "ghost", onclick: async () => {
    showHistory.disabled = true;
    try {
      const versions = await api("GET", bankPath(bank, "mental-models", m.name, "history"));
      historyBox.replaceChildren(versions.length
        ? table(["Version", "Content", "Generator", "Reason", "Generated"], versions.slice().reverse().map((v) => h("tr", {},
            h("td", { class: "num" }, `v${v.version}`), h("td", { dir: "auto" }, h("div", { class: "pre-wrap" }, v.content)),
            h("td", {}, v.generator), h("td", {}, v.reason || "—"), h("td", {}, when(v.generated_at)))))
        : empty("No version yet."));
    } catch (error) {
      historyBox.replaceChildren(errorView(error, bank));
    }
  } }, "History");
  return h("section", { class: "card model", "data-name": m.name },
    h("div", { class: "row spread" }, h("h2", {}, m.name), h("div", { class: "row" }, badge(m.status, STATUS[m.status]), badge(`v${m.version}`))),
    h("p", { class: "question", dir: "auto" }, h("strong", {}, "Question: "), m.question),
    m.content ? h("div", { class: "pre-wrap model-content", dir: "auto" }, m.content) : empty("Not answered yet."),
    h("dl", { class: "facts" },
      h("dt", {}, "Refreshed"), h("dd", {}, when(m.refreshed_at)),
      h("dt", {}, "Stale"), h("dd", {}, m.stale_since ? [when(m.stale_since), m.stale_reason ? ` — ${m.stale_reason}` : ""] : h("span", { class: "muted" }, "no")),
      h("dt", {}, "Refresh every"), h("dd", {}, m.refresh_every ? `${Math.round(m.refresh_every / 60)} min` : "when its memories change"),
      h("dt", {}, "Answer budget"), h("dd", {}, `${m.max_answer_tokens} tokens`),
      h("dt", {}, "Sources"), h("dd", {}, `${m.source_ids.length} memories`),
      m.last_error ? [h("dt", {}, "Last error"), h("dd", { class: "bad-text" }, m.last_error)] : null),
    h("div", { class: "row" }, refresh, showHistory, status),
    historyBox);
}
