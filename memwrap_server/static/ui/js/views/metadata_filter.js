// The memory list's metadata filter: one `key = value` condition, or a whole recall filter as JSON (the form
// `filters` takes everywhere: {"metadata": {...}, "session_ids": [...], ...}). Both may be given; they must
// both hold. A mistake is said next to the field, before anything is asked of the server; what the server
// refuses (an unknown operator, a bad key) is said by the list, never shown as an empty list.

import { field, h } from "../dom.js";

export class FilterError extends Error {}

// A value as typed: JSON when it reads as JSON (2, true, null, "quoted text", [1, 2]), else the text itself.
export function typedValue(text) {
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed);
  } catch {
    return trimmed;
  }
}

// The filter the list is asked for, from the query's mk/mv (key = value) and mf (JSON), and the day range
// already built by the list (`dates`: mentioned_after/before or null).
export function buildFilter({ key, value, json }, dates) {
  const filter = {};
  if (json) {
    let parsed;
    try {
      parsed = JSON.parse(json);
    } catch (error) {
      throw new FilterError(`The JSON filter is not valid JSON: ${error.message}`);
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new FilterError('The JSON filter must be an object, e.g. {"metadata": {"source": "cli"}}.');
    }
    Object.assign(filter, parsed);
  }
  if (key) {
    const condition = { key, eq: typedValue(value) };
    filter.metadata = filter.metadata ? { and: [filter.metadata, condition] } : condition;
  } else if (value) {
    throw new FilterError("A metadata value needs its key: fill in “Metadata key”.");
  }
  for (const [name, when] of Object.entries(dates || {})) {
    if (when !== undefined && filter[name] === undefined) filter[name] = when;
  }
  return Object.keys(filter).length ? filter : null;
}

// The fields, for the list's filter form (names mk, mv, mf: the form's submit puts them in the page's URL).
export function metadataFields(values) {
  const key = h("input", { type: "text", name: "mk", value: values.key, placeholder: "e.g. source", spellcheck: "false" });
  const value = h("input", { type: "text", name: "mv", value: values.value, placeholder: "e.g. cli, 2, true" });
  const json = h("textarea", { name: "mf", rows: 3, class: "mono", spellcheck: "false",
    placeholder: '{"metadata": {"priority": {"gte": 2}}, "session_ids": ["chat-7"]}' }, values.json);
  return [
    field("Metadata key", key),
    field("= value", value, "JSON when it reads as JSON (2, true, \"2\"), else text"),
    h("details", { class: "field wide json-filter", open: values.json ? true : null },
      h("summary", {}, "JSON filter"),
      field("Filter (JSON, as recall's filters)", json)),
  ];
}
