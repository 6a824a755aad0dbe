// The REST API through the console's proxy: /api + the API's path (GET /api/clusters ->
// GET {endpoint}/clusters). Every request carries X-Hypd-Console: 1, without which the proxy
// refuses it (docs/console.md).

/** An answer of the API (or the proxy) with a 4xx/5xx status: code, message and details. */
export class ApiFailure extends Error {
  constructor(status, body) {
    const code = (body && body.code) || `HTTP${status}`;
    const message = (body && body.message) || "the API gave no reason";
    super(`${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.detail = message;
    this.details = (body && typeof body.details === "object" && body.details) || {};
  }

  /** [{field, message}] of a validation error (details.errors), else []. */
  get fields() {
    const errors = Array.isArray(this.details.errors) ? this.details.errors : [];
    return errors.filter((e) => e && e.field).map((e) => ({ field: String(e.field), message: String(e.message || "") }));
  }
}

/** Send one request; resolves to {status, body} for 2xx, rejects with ApiFailure otherwise. */
export async function call(method, path, body) {
  const init = { method, headers: { "X-Hypd-Console": "1", Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(`/api${path}`, init);
  } catch (err) {
    throw new ApiFailure(0, { code: "ConsoleUnreachable", message: `the console server did not answer (${err.message}); is hypd console still running?` });
  }
  const text = await response.text();
  let parsed = {};
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { code: `HTTP${response.status}`, message: text.slice(0, 300) };
    }
  }
  if (!response.ok) throw new ApiFailure(response.status, parsed);
  return { status: response.status, body: parsed };
}

export const get = async (path) => (await call("GET", path)).body;

/** A path from a template and values, each path value percent-encoded. */
export function path(strings, ...values) {
  return strings.reduce((out, s, i) => out + s + (i < values.length ? encodeURIComponent(values[i]) : ""), "");
}

/** A query string of the given non-empty values ("" when there are none). */
export function query(params) {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "");
  return entries.length ? "?" + new URLSearchParams(entries).toString() : "";
}
