// Small DOM helpers. Text always goes in as text (never innerHTML): what the API returns is
// data, not markup.

/** h("div", {class: "x", onclick: fn}, child, ...): an element with attributes and children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "value") el.value = value;
    else if (key === "checked" || key === "disabled" || key === "selected") el[key] = Boolean(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const TONES = {
  SUCCEEDED: "ok", ACTIVE: "ok", InService: "ok", Ready: "ok", Running: "ok", Healthy: "ok",
  ENABLED: "ok", enabled: "ok", installed: "ok", on: "ok", Succeeded: "ok", Completed: "ok", Schedulable: "ok",
  RUNNING: "run", CREATING: "run", UPDATING: "run", Creating: "run", Updating: "run",
  SystemUpdating: "run", Pending: "run", DELETING: "run", Deleting: "run", InProgress: "run",
  PENDING: "wait", WAITING: "wait", Scheduled: "wait",
  FAILED: "bad", Failed: "bad", CANCELLED: "bad", Unhealthy: "bad", Failure: "bad",
  DEGRADED: "bad", ShuttingDown: "bad",
};

/** A status as a coloured badge (data-status carries the raw value). */
export function badge(status) {
  const text = status === undefined || status === null || status === "" ? "-" : String(status);
  return h("span", { class: `badge ${TONES[text] || ""}`, "data-status": text }, text);
}

/** An API failure (or any error) as the user should read it: code, status, message, fields. */
export function errorBox(err) {
  const fields = err && err.fields ? err.fields : [];
  const details = err && err.details ? err.details : {};
  const running = details.operationId
    ? h("div", {}, "Operation in the way: ", h("a", { href: `#/operations/${details.operationId}` }, details.operationId))
    : null;
  return h("div", { class: "error", role: "alert", "data-error-code": (err && err.code) || "Error" },
    h("strong", {}, (err && err.code) || "Error"),
    err && err.status ? ` (HTTP ${err.status})` : "",
    ": ", (err && (err.detail || err.message)) || String(err),
    fields.length ? h("ul", {}, fields.map((f) => h("li", { "data-field": f.field }, h("code", {}, f.field), ": ", f.message))) : null,
    running);
}

/** A table: columns [[heading, (row) => cell]], rows, and what to say when there are none. */
export function table(columns, rows, empty = "None.", rowAttrs = () => ({})) {
  if (!rows.length) return h("p", { class: "muted" }, empty);
  return h("table", {},
    h("thead", {}, h("tr", {}, columns.map(([title]) => h("th", {}, title)))),
    h("tbody", {}, rows.map((row) => h("tr", rowAttrs(row), columns.map(([, cell]) => h("td", {}, cell(row)))))));
}

/** "1m05s", "3h02m", "0.4s" for a duration in milliseconds. */
export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms) || ms < 0) return "-";
  const s = ms / 1000;
  if (s < 10) return `${s.toFixed(1)}s`;
  if (s < 60) return `${Math.round(s)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.round(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

/** The time between two ISO timestamps (`end` missing: not ended, "-"). */
export function between(start, end) {
  if (!start || !end) return "-";
  return duration(Date.parse(end) - Date.parse(start));
}

/** A timestamp as a short local date and time. */
export function when(iso) {
  if (!iso) return "-";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

/** "2048 GiB" for MiB. */
export function gib(mib) {
  if (mib === null || mib === undefined) return "-";
  return `${Math.round(mib / 1024)} GiB`;
}

/** The lines of a textarea, trimmed, the empty ones left out. */
export function lines(text) {
  return text.split("\n").map((l) => l.trim()).filter(Boolean);
}

/** "key=value" pairs as an object: one a line, or also comma-separated (`separators`). */
export function parsePairs(text, separators = /[\n,]/) {
  const pairs = {};
  for (const item of text.split(separators).map((l) => l.trim()).filter(Boolean)) {
    const [key, ...rest] = item.split("=");
    pairs[key.trim()] = rest.join("=").trim();
  }
  return pairs;
}

/** A confirm-then-act button: disables itself while `action` runs. */
export function actionButton(label, action, attrs = {}) {
  const button = h("button", { type: "button", ...attrs }, label);
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await action();
    } finally {
      button.disabled = false;
    }
  });
  return button;
}
