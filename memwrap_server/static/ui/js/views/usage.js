// What the engine's own LLM did for a bank: requests and tokens per purpose (extraction, consolidation,
// reflect) and per day, from the counters the engine adds to after every request (GET .../llm-usage).

import { api, bankPath } from "../api.js";
import { empty, h, link, route, table } from "../dom.js";

const SPANS = [7, 30, 90, 366];

export async function usageView({ bank, query }) {
  const asked = parseInt(query.get("days") || "30", 10);
  const days = SPANS.includes(asked) ? asked : 30;
  const usage = await api("GET", bankPath(bank, "llm-usage"), { query: { days } });
  const n = (value) => h("td", { class: "num" }, value.toLocaleString());
  const counts = (c) => [n(c.requests), n(c.input_tokens), n(c.output_tokens), n(c.cached_input_tokens)];
  // A function: a header cell is one DOM node, and each table needs its own.
  const heads = () => ["Requests", "Input tokens", "Output tokens", "Cached input"].map((x) => h("th", { scope: "col", class: "num" }, x));
  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "LLM usage"), h("p", { class: "muted" }, bank),
      h("nav", { class: "segmented", "aria-label": "Period" }, SPANS.map((span) => link(route("b", bank, "usage", { days: span }),
        h("span", { class: span === days ? "seg on" : "seg", "aria-current": span === days ? "true" : null }, span === 366 ? "1 year" : `${span} days`))))),
    h("p", { class: "muted" }, `The engine's own LLM requests for this bank since ${usage.since} (UTC), as the provider counted their tokens. `,
      "An application's own model calls (a wrapped client) are not counted here."),
    h("div", { class: "stats-row" },
      stat("Requests", usage.total.requests, "total-requests"),
      stat("Input tokens", usage.total.input_tokens, "total-input"),
      stat("Output tokens", usage.total.output_tokens, "total-output")),
    h("section", { class: "card" }, h("h2", {}, "By purpose"),
      usage.by_purpose.length
        ? table([h("th", { scope: "col" }, "Purpose"), ...heads()], [
            ...usage.by_purpose.map((c) => h("tr", { "data-purpose": c.purpose }, h("th", { scope: "row" }, c.purpose), ...counts(c))),
            h("tr", { "data-purpose": "all", class: "total" }, h("th", { scope: "row" }, "all"), ...counts(usage.total)),
          ], { class: "usage" })
        : empty("No LLM request for this bank in this period (no LLM is configured, or none was needed).")),
    usage.days.length ? h("section", { class: "card" }, h("h2", {}, "By day"),
      table([h("th", { scope: "col" }, "Day"), h("th", { scope: "col" }, "Purpose"), ...heads()],
        usage.days.map((d) => h("tr", { "data-day": d.day, "data-purpose": d.purpose },
          h("td", { class: "mono" }, d.day), h("td", {}, d.purpose), ...counts(d))), { class: "usage-days" })) : null);
}

function stat(label, value, id) {
  return h("div", { class: "stat" }, h("div", { class: "stat-label" }, label), h("div", { class: "stat-value", id }, value.toLocaleString()));
}
