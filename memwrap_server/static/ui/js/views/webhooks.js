// A bank's webhooks: its subscriptions (add, pause, resume, delete) and the delivery log with every attempt.
// The secret of a new subscription is shown once, here, right after it is created (docs/webhooks.md).

import { api, bankPath } from "../api.js";
import { badge, empty, field, h, link, notice, route, section, table, truncate, when } from "../dom.js";

const EVENTS = ["retained", "updated", "invalidated", "deleted", "observation.changed", "mental_model.refreshed"];
const STATUSES = ["pending", "delivered", "failed", "skipped"];
const STATUS_KIND = { pending: "info", delivered: "good", failed: "bad", skipped: "" };

export async function webhooksView({ bank, query, navigate, errorView }) {
  const status = STATUSES.includes(query.get("status")) ? query.get("status") : "";
  const [hooks, deliveries] = await Promise.all([
    api("GET", bankPath(bank, "webhooks")),
    api("GET", bankPath(bank, "webhook-deliveries"), { query: { status: status || null, limit: 100 } }),
  ]);
  const byId = Object.fromEntries(hooks.map((w) => [w.id, w]));
  const actionStatus = h("div", { class: "action-status", "aria-live": "polite" });
  const act = async (label, fn) => {
    actionStatus.replaceChildren(h("span", { class: "muted" }, `${label}…`));
    try {
      await fn();
      navigate(location.hash);
    } catch (error) {
      actionStatus.replaceChildren(errorView(error, bank));
    }
  };
  const toggle = (w) => act(w.enabled ? "Pausing" : "Resuming",
    () => api("PATCH", bankPath(bank, "webhooks", w.id), { body: { enabled: !w.enabled } }));
  const remove = (w) => {
    if (!confirm(`Delete the webhook to ${w.url} and its delivery log?`)) return;
    act("Deleting", () => api("DELETE", bankPath(bank, "webhooks", w.id)));
  };

  const list = hooks.length
    ? table(["URL", "Events", "Text", "State", "Created", ""], hooks.map((w) => h("tr", { "data-webhook-id": w.id },
        h("td", { class: "mono small" }, w.url, w.description ? h("div", { class: "muted" }, w.description) : null),
        h("td", { class: "small" }, w.events.length === EVENTS.length ? "all events" : w.events.join(", ")),
        h("td", { class: "nowrap" }, w.include_text ? "included" : h("span", { class: "muted" }, "ids only")),
        h("td", {}, w.enabled ? badge("enabled", "good") : badge("paused", "")),
        h("td", {}, when(w.created_at)),
        h("td", { class: "row" },
          h("button", { type: "button", class: "ghost toggle", onclick: () => toggle(w) }, w.enabled ? "Pause" : "Resume"),
          h("button", { type: "button", class: "danger remove", "aria-label": `Delete the webhook to ${w.url}`, onclick: () => remove(w) }, "Delete…")))))
    : empty("No webhook yet: add one below.");

  return h("div", {},
    h("div", { class: "page-head" }, h("h1", {}, "Webhooks"),
      h("p", { class: "muted" }, "The bank's memory events, POSTed as signed JSON to your URLs (how a receiver checks ",
        "the signature: docs/webhooks.md).")),
    section("Subscriptions", list, actionStatus),
    addSection(bank, navigate, errorView),
    section(status ? `Deliveries, ${status}` : "Latest deliveries",
      h("p", { class: "row" }, "Show: ", link(route("b", bank, "webhooks"), "all"),
        STATUSES.map((s) => [" · ", link(route("b", bank, "webhooks", { status: s }), s)])),
      deliveries.length ? deliveryTable(deliveries, byId) : empty("No delivery here.")));
}

function addSection(bank, navigate, errorView) {
  const url = h("input", { type: "url", name: "url", required: true, placeholder: "https://example.com/hooks/memwrap", spellcheck: "false" });
  const description = h("input", { type: "text", name: "description", maxlength: "500" });
  const includeText = h("input", { type: "checkbox", name: "include_text", checked: true });
  const boxes = EVENTS.map((e) => h("input", { type: "checkbox", name: "events", value: e, checked: true }));
  const result = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "filters", id: "webhook-add" },
    field("URL", url, "http or https; every request carries an HMAC-SHA256 signature."),
    h("fieldset", { class: "field" }, h("legend", {}, "Events"),
      h("div", { class: "checks" }, boxes.map((box, i) => h("label", { class: "check" }, box, " ", EVENTS[i])))),
    h("label", { class: "check" }, includeText, " Include the memories' text (otherwise their ids only)"),
    field("Description", description, "Optional: who receives it."),
    h("div", { class: "row" }, h("button", { type: "submit" }, "Add webhook")),
    result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const events = boxes.filter((b) => b.checked).map((b) => b.value);
    try {
      const created = await api("POST", bankPath(bank, "webhooks"), {
        body: { url: url.value.trim(), events: events.length ? events : null, include_text: includeText.checked, description: description.value.trim() || null },
      });
      // The secret exists in this answer only: show it until the user moves on.
      result.replaceChildren(notice("info", h("strong", {}, "Webhook added. "),
        "Its signing secret is shown this once; keep it where your receiver can read it: ",
        h("code", { class: "secret", id: "webhook-secret" }, created.secret), " ",
        h("button", { type: "button", class: "ghost", onclick: () => navigate(location.hash) }, "Done, I kept it")));
      form.querySelector("button[type=submit]").disabled = true;
    } catch (error) {
      result.replaceChildren(errorView(error, bank));
    }
  });
  return section("Add a webhook", form);
}

function deliveryTable(deliveries, byId) {
  return table(["Delivery", "Event", "To", "State", "Attempts", "Last answer", "Created", "Attempts and payload"], deliveries.map((d) => {
    const last = d.log.length ? d.log[d.log.length - 1] : null;
    return h("tr", { "data-delivery-id": d.id },
      h("td", { class: "num" }, `#${d.id}`),
      h("td", { class: "nowrap" }, d.event),
      h("td", { class: "mono small" }, byId[d.subscription_id] ? truncate(byId[d.subscription_id].url, 60) : d.subscription_id),
      h("td", {}, badge(d.status, STATUS_KIND[d.status])),
      h("td", { class: "num" }, String(d.attempts)),
      h("td", { class: "small" }, last ? (last.status_code ? `HTTP ${last.status_code}` : h("span", { class: "bad-text" }, truncate(last.error || "", 120))) : "—"),
      h("td", {}, when(d.created_at)),
      h("td", {}, h("details", {}, h("summary", {}, `${d.log.length} attempt(s)`),
        d.log.length
          ? table(["#", "Answer", "Error", "Took", "When"], d.log.map((a) => h("tr", {},
              h("td", { class: "num" }, String(a.attempt)),
              h("td", {}, a.status_code ? String(a.status_code) : "—"),
              h("td", { class: "bad-text small" }, truncate(a.error || "", 300)),
              h("td", { class: "num" }, `${Math.round(a.duration_ms)} ms`),
              h("td", {}, when(a.started_at)))))
          : h("p", { class: "muted" }, "Not tried yet."),
        h("p", { class: "small muted" }, "Idempotency key ", h("code", {}, d.event_id)),
        h("pre", { class: "json" }, JSON.stringify(d.payload, null, 2)))));
  }));
}
