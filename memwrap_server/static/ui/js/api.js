// The public REST API (/v1/...), with the key the user entered once for this tab.

const KEY = "memwrap.key";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const key = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  forget: () => sessionStorage.removeItem(KEY),
};

export async function api(method, path, { query, body } = {}) {
  const response = await send(method, path, {
    query, body: body === undefined ? undefined : JSON.stringify(body), type: body === undefined ? null : "application/json",
  });
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  return data;
}

// The request itself, with the key; an answer that is not 2xx is thrown as ApiError. For bodies and answers
// that are not JSON (a bank's export and import: JSON lines), the Response is the caller's to read.
export async function send(method, path, { query, body, type, accept = "application/json" } = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value === null || value === undefined || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(one));
  }
  const headers = { Accept: accept };
  const secret = key.get();
  if (secret) headers.Authorization = `Bearer ${secret}`;
  if (type) headers["Content-Type"] = type;
  let response;
  try {
    response = await fetch(url, { method, headers, body });
  } catch (error) {
    throw new ApiError(0, "network", `The server did not answer (${error.message}).`);
  }
  if (!response.ok) {
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    const detail = (data && data.error) || {};
    throw new ApiError(response.status, detail.code || `http_${response.status}`, detail.message || response.statusText);
  }
  return response;
}

export const bankPath = (bank, ...rest) => ["/v1/banks", encodeURIComponent(bank), ...rest.map((p) => encodeURIComponent(String(p)))].join("/");
