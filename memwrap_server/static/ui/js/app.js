// The memory browser: a hash router over the views, the key dialog, the bank picker and the theme.

import { ApiError, api, key } from "./api.js";
import { h, notice } from "./dom.js";
import { banksView } from "./views/banks.js";
import { memoriesView } from "./views/memories.js";
import { memoryView } from "./views/memory.js";
import { recallView } from "./views/recall.js";
import { observationsView, observationView } from "./views/observations.js";
import { modelsView } from "./views/models.js";
import { entitiesView, entityView } from "./views/entities.js";
import { jobsView } from "./views/jobs.js";
import { addMemoryView } from "./views/add_memory.js";
import { sessionsView, sessionView } from "./views/sessions.js";
import { usageView } from "./views/usage.js";
import { transferView } from "./views/transfer.js";
import { webhooksView } from "./views/webhooks.js";

const ROUTES = [
  [/^$/, null, banksView, "Banks"],
  [/^b\/([^/]+)$/, "memories", memoriesView, "Memories"],
  [/^b\/([^/]+)\/memories$/, "memories", memoriesView, "Memories"],
  [/^b\/([^/]+)\/m\/([^/]+)$/, "memories", memoryView, "Memory"],
  [/^b\/([^/]+)\/recall$/, "recall", recallView, "Recall debugger"],
  [/^b\/([^/]+)\/observations$/, "observations", observationsView, "Observations"],
  [/^b\/([^/]+)\/o\/([^/]+)$/, "observations", observationView, "Observation"],
  [/^b\/([^/]+)\/models$/, "models", modelsView, "Mental models"],
  [/^b\/([^/]+)\/entities$/, "entities", entitiesView, "Entities"],
  [/^b\/([^/]+)\/e\/([^/]+)$/, "entities", entityView, "Entity"],
  [/^b\/([^/]+)\/jobs$/, "jobs", jobsView, "Jobs"],
  [/^b\/([^/]+)\/new$/, "memories", addMemoryView, "Add a memory"],
  [/^b\/([^/]+)\/sessions$/, "sessions", sessionsView, "Sessions"],
  [/^b\/([^/]+)\/s\/([^/]+)$/, "sessions", sessionView, "Session"],
  [/^b\/([^/]+)\/usage$/, "usage", usageView, "LLM usage"],
  [/^b\/([^/]+)\/transfer$/, "transfer", transferView, "Export and import"],
  [/^b\/([^/]+)\/webhooks$/, "webhooks", webhooksView, "Webhooks"],
];

const main = document.getElementById("view");
let renderId = 0;
let knownBanks = null;

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, qs] = raw.split("?", 2);
  return { path: path.replace(/\/$/, ""), query: new URLSearchParams(qs || "") };
}

// Views call this to change their own query (filters, paging) without leaving the page.
export function navigate(href) {
  if (location.hash === href) render();
  else location.hash = href;
}

async function render() {
  const id = ++renderId;
  const { path, query } = parseHash();
  const match = ROUTES.map(([re, tab, view, title]) => [path.match(re), tab, view, title]).find(([m]) => m);
  if (!match) {
    main.replaceChildren(notice("error", "No such page. ", h("a", { href: "#/" }, "Back to the banks")));
    return;
  }
  const [m, tab, view, title] = match;
  const params = m.slice(1).map(decodeURIComponent);
  const bank = tab ? params[0] : null;
  document.title = bank ? `${title} · ${bank} — memwrap` : `${title} — memwrap`;
  updateNav(bank, tab);
  main.setAttribute("aria-busy", "true");
  main.replaceChildren(h("p", { class: "loading" }, "Loading…"));
  try {
    const node = await view({ params, query, bank, navigate, errorView });
    if (id !== renderId) return; // a newer navigation won
    main.replaceChildren(node);
    if (askedByServer && dialog.open) dialog.close(); // the key arrived another way (another tab, a reload)
    askedByServer = false;
  } catch (error) {
    if (id !== renderId) return;
    main.replaceChildren(errorView(error, bank));
  } finally {
    if (id === renderId) {
      main.removeAttribute("aria-busy");
      main.dataset.rendered = String(id); // how many views were drawn: tests and bench/ui_pages.py wait on it
    }
  }
}

export function errorView(error, bank) {
  if (!(error instanceof ApiError)) {
    console.error(error);
    return notice("error", `Something went wrong in the page: ${error.message}`);
  }
  if (error.status === 401) {
    openKeyDialog(key.get() ? "That key was not accepted. Enter another one." : null, true);
    return notice("error", h("strong", {}, "An API key is needed. "), error.message, " ",
      h("button", { type: "button", onclick: () => openKeyDialog() }, "Enter a key"));
  }
  if (error.status === 403) {
    return notice("error", h("strong", {}, "Not allowed. "),
      bank ? `This API key may not use bank “${bank}”. ` : "", error.message, " ", h("a", { href: "#/" }, "See the banks this key may use"));
  }
  if (error.status === 404) return notice("error", h("strong", {}, "Not found. "), error.message);
  if (error.status === 503) return notice("error", h("strong", {}, "The memory database is unavailable. "), error.message);
  return notice("error", h("strong", {}, `Error ${error.status || ""} (${error.code}). `), error.message);
}

async function loadBanks() {
  try {
    knownBanks = (await api("GET", "/v1/banks")).map((b) => b.bank_id);
  } catch {
    knownBanks = null;
  }
  return knownBanks;
}

function updateNav(bank, tab) {
  const nav = document.getElementById("banknav");
  nav.hidden = !bank;
  if (!bank) return;
  for (const a of nav.querySelectorAll("a[data-tab]")) {
    a.href = `#/b/${encodeURIComponent(bank)}/${a.dataset.tab}`;
    if (a.dataset.tab === tab) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const pick = document.getElementById("bankpick");
  const fill = (banks) => {
    const names = [...new Set([...(banks || []), bank])].sort();
    pick.replaceChildren(...names.map((name) => h("option", { value: name, selected: name === bank }, name)));
  };
  fill(knownBanks);
  if (knownBanks === null) loadBanks().then(fill);
}

document.getElementById("bankpick").addEventListener("change", (event) => {
  const { path } = parseHash();
  const tab = (path.match(/^b\/[^/]+\/(memories|recall|observations|models|entities|jobs|sessions|usage|transfer|webhooks)/) || [])[1] || "memories";
  location.hash = `#/b/${encodeURIComponent(event.target.value)}/${tab}`;
});

// --- key dialog --------------------------------------------------------------------------------------------

const dialog = document.getElementById("keydialog");
let askedByServer = false;

function openKeyDialog(message, byServer = false) {
  askedByServer = byServer;
  const hint = document.getElementById("keyhint");
  if (message) hint.dataset.message = message;
  if (message) hint.textContent = message;
  document.getElementById("keyinput").value = "";
  if (!dialog.open) dialog.showModal();
}

document.getElementById("keyform").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = document.getElementById("keyinput").value.trim();
  if (!value) return;
  key.set(value);
  dialog.close();
  knownBanks = null;
  updateKeyButton();
  render();
});
document.getElementById("keycancel").addEventListener("click", () => dialog.close());
document.getElementById("keyforget").addEventListener("click", () => {
  key.forget();
  dialog.close();
  knownBanks = null;
  updateKeyButton();
  render();
});
document.getElementById("keybtn").addEventListener("click", () => openKeyDialog());

function updateKeyButton() {
  document.getElementById("keybtn").textContent = key.get() ? "API key ✓" : "API key";
}

// --- theme -------------------------------------------------------------------------------------------------

const THEMES = ["auto", "light", "dark"];

function applyTheme(theme) {
  if (theme === "auto") document.documentElement.removeAttribute("data-theme");
  else document.documentElement.dataset.theme = theme;
  document.getElementById("theme").textContent = `Theme: ${theme}`;
}

document.getElementById("theme").addEventListener("click", () => {
  const current = localStorage.getItem("memwrap.theme") || "auto";
  const next = THEMES[(THEMES.indexOf(current) + 1) % THEMES.length];
  localStorage.setItem("memwrap.theme", next);
  applyTheme(next);
});

applyTheme(localStorage.getItem("memwrap.theme") || "auto");
updateKeyButton();
window.addEventListener("hashchange", render);
render();
