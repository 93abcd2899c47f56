// Building the page. Every piece of text goes in as a text node (never innerHTML): memory text is untrusted.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  add(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  add(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") el.setAttribute("class", value);
    else if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
}

export function add(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// A link inside the app: the parts are encoded, so an id or a bank name cannot turn it into another URL.
export function route(...parts) {
  const [path, query] = parts.length && typeof parts[parts.length - 1] === "object" ? [parts.slice(0, -1), parts[parts.length - 1]] : [parts, null];
  let href = "#/" + path.map((p) => encodeURIComponent(String(p))).join("/");
  const qs = new URLSearchParams();
  for (const [name, value] of Object.entries(query || {})) {
    for (const one of Array.isArray(value) ? value : [value]) {
      if (one !== null && one !== undefined && one !== "") qs.append(name, String(one));
    }
  }
  if ([...qs].length) href += "?" + qs.toString();
  return href;
}

export function link(href, ...children) {
  return h("a", { href }, ...children);
}

export function when(iso) {
  if (!iso) return h("span", { class: "muted" }, "—");
  const date = new Date(iso);
  return h("time", { datetime: iso, title: date.toString() }, formatDate(date), " ", h("span", { class: "muted" }, ago(date)));
}

export function formatDate(date) {
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

export function ago(date) {
  const seconds = (Date.now() - date.getTime()) / 1000;
  const future = seconds < 0;
  const s = Math.abs(seconds);
  const [n, unit] = s < 60 ? [s, "s"] : s < 3600 ? [s / 60, "min"] : s < 86400 ? [s / 3600, "h"] : s < 86400 * 365 ? [s / 86400, "d"] : [s / 86400 / 365, "y"];
  const text = `${Math.floor(n)} ${unit}`;
  return future ? `(in ${text})` : `(${text} ago)`;
}

export function badge(text, kind) {
  return h("span", { class: `badge ${kind || ""}` }, text);
}

export function typeBadge(type) {
  return badge(type, `t-${type}`);
}

export function table(headers, rows, attrs) {
  return h("div", { class: "table-wrap" },
    h("table", attrs || {},
      h("thead", {}, h("tr", {}, headers.map((x) => (typeof x === "string" ? h("th", { scope: "col" }, x) : x)))),
      h("tbody", {}, rows)));
}

export function empty(text) {
  return h("p", { class: "empty" }, text);
}

export function section(title, ...children) {
  return h("section", { class: "card" }, h("h2", {}, title), ...children);
}

export function notice(kind, ...children) {
  return h("div", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, ...children);
}

export function field(label, control, hint) {
  const id = control.id || `f-${Math.random().toString(36).slice(2)}`;
  control.id = id;
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hint ? h("small", { class: "muted" }, hint) : null);
}

export function truncate(text, max) {
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}
