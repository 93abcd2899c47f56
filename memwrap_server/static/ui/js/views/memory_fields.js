// Reading what an operator typed into a memory's fields, the same way on every form (add, edit).

// Tags typed as text, as the CLI, query strings and X-Memwrap-Tags read them (memwrap/filters.py split_tags):
// comma-separated, each trimmed, blanks dropped. Every view reads its tag fields with this.
export function splitTags(text) {
  return text.split(",").map((t) => t.trim()).filter(Boolean);
}

// A metadata object from JSON text (empty: {}): { value } or { error } saying what is wrong.
export function parseMetadata(text) {
  let parsed;
  try {
    parsed = JSON.parse(text.trim() || "{}");
  } catch (error) {
    return { error: `Metadata is not valid JSON: ${error.message}` };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return { error: "Metadata must be a JSON object ({…})." };
  return { value: parsed };
}

// An ISO time as the value of an <input type="datetime-local"> in the browser's time zone, to the second.
export function localInput(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}
