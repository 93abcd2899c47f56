// Select memories on a page of the list and delete or invalidate them together: a checkbox per row, one to
// select the whole page, a confirm dialog that says how many, and the count of what was done (or not) after.
// There is no bulk verb: each memory is one call of the existing REST verb, a few at a time.

import { ApiError, api, bankPath } from "../api.js";
import { h, notice } from "../dom.js";

const AT_ONCE = 4;
let lastResult = null; // shown once, on the next drawing of the list (the list is drawn again after an action)

export function takeResult() {
  const result = lastResult;
  lastResult = null;
  return result ? notice(result.failed.length ? "error" : "ok", result.text,
    result.failed.length ? h("ul", { class: "failures" }, result.failed.map((f) => h("li", {}, f))) : null) : null;
}

// The checkbox cell of a row (first column) and the header cell that selects the whole page.
export function rowBox(id) {
  return h("td", { class: "pick" }, h("input", { type: "checkbox", class: "pick", value: id, "aria-label": "Select this memory" }));
}

export function pageBox() {
  return h("th", { scope: "col", class: "pick" }, h("input", { type: "checkbox", id: "pick-page", "aria-label": "Select every memory on this page" }));
}

// The bar above the table: what is selected, and the two actions. `container` holds the table's checkboxes.
export function bulkBar(bank, container, redraw) {
  const count = h("span", { id: "picked", class: "muted", "aria-live": "polite" }, "None selected");
  const del = h("button", { type: "button", id: "bulk-delete", class: "danger", disabled: true }, "Delete selected…");
  const inv = h("button", { type: "button", id: "bulk-invalidate", disabled: true }, "Invalidate selected…");
  const bar = h("div", { class: "row bulk-bar" }, count, inv, del);
  const picked = () => [...container.querySelectorAll("tbody input.pick:checked")].map((box) => box.value);
  const update = () => {
    const n = picked().length;
    const all = container.querySelectorAll("tbody input.pick");
    count.textContent = n ? `${n} selected` : "None selected";
    del.disabled = inv.disabled = n === 0;
    const page = container.querySelector("#pick-page");
    if (page) {
      page.checked = n > 0 && n === all.length;
      page.indeterminate = n > 0 && n < all.length;
    }
  };
  container.addEventListener("change", (event) => {
    if (event.target.id === "pick-page") {
      for (const box of container.querySelectorAll("tbody input.pick")) box.checked = event.target.checked;
    }
    update();
  });
  del.addEventListener("click", () => confirmBulk({
    title: `Delete ${plural(picked().length)}?`,
    text: "Deleted for good: what was learnt from them forgets them too. This cannot be undone.",
    action: "Delete", danger: true,
  }).then((answer) => answer && run(bank, picked(), "delete", answer.reason).then(redraw)));
  inv.addEventListener("click", () => confirmBulk({
    title: `Invalidate ${plural(picked().length)}?`,
    text: "Recall no longer sees them and what was learnt from them stops counting them. Restore undoes it, one by one.",
    action: "Invalidate", reason: true,
  }).then((answer) => answer && run(bank, picked(), "invalidate", answer.reason).then(redraw)));
  return bar;
}

function plural(n) {
  return n === 1 ? "1 memory" : `${n} memories`;
}

// A modal dialog: resolves to { reason } when confirmed, null when cancelled.
function confirmBulk({ title, text, action, danger, reason }) {
  return new Promise((resolve) => {
    const why = reason ? h("input", { type: "text", name: "reason", id: "bulk-reason", maxlength: 1000, placeholder: "why they are wrong (kept with them)" }) : null;
    const ok = h("button", { type: "submit", id: "bulk-confirm", class: danger ? "danger" : null }, action);
    const cancel = h("button", { type: "button", id: "bulk-cancel", class: "ghost" }, "Cancel");
    const form = h("form", { method: "dialog" }, h("h2", {}, title), h("p", {}, text),
      why ? h("label", { for: "bulk-reason" }, "Reason") : null, why, h("div", { class: "row end" }, cancel, ok));
    const dialog = h("dialog", { id: "bulk-dialog", "aria-label": title }, form);
    document.body.append(dialog);
    const done = (value) => {
      if (dialog.open) dialog.close();
      dialog.remove();
      resolve(value);
    };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      done({ reason: why ? why.value.trim() : "" });
    });
    cancel.addEventListener("click", () => done(null));
    dialog.addEventListener("cancel", () => done(null));
    dialog.showModal();
    (why || ok).focus();
  });
}

async function run(bank, ids, verb, reason) {
  const call = (id) => verb === "delete"
    ? api("DELETE", bankPath(bank, "memories", id))
    : api("POST", bankPath(bank, "memories", id, "invalidate"), { body: { reason } });
  const failed = [];
  let ok = 0;
  for (let i = 0; i < ids.length; i += AT_ONCE) {
    const batch = ids.slice(i, i + AT_ONCE);
    const results = await Promise.allSettled(batch.map(call));
    results.forEach((result, j) => {
      if (result.status === "fulfilled") ok += 1;
      else failed.push(`${batch[j]}: ${result.reason instanceof ApiError ? result.reason.message : String(result.reason)}`);
    });
  }
  const done = verb === "delete" ? "Deleted" : "Invalidated";
  lastResult = {
    text: failed.length ? `${done} ${ok} of ${plural(ids.length)}; ${failed.length} failed:` : `${done} ${plural(ok)}.`,
    failed,
  };
}
