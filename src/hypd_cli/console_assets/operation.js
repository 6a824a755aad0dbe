// The staged-progress panel of one operation: polls GET /operations/{id} every 2 s while it
// runs and shows each stage (status, attempts, elapsed, what it waits for, its error), the
// timeline of every attempt, the operation's error, and Retry / Cancel.

import { call, get, path } from "./api.js";
import { actionButton, badge, between, duration, errorBox, fill, h, table, when } from "./dom.js";

export const POLL_MS = 2000;
const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

/** Whether an operation's status is final. */
export const isTerminal = (status) => TERMINAL.has(status);

function stageElapsed(stage, operation) {
  if (!stage.startedAt) return "-";
  if (stage.endedAt) return between(stage.startedAt, stage.endedAt);
  if (stage.status === "RUNNING") {
    // The API's clock may run ahead of this browser's (the local cloud's virtual clock).
    const now = Math.max(Date.now(), Date.parse(operation.updatedAt || 0));
    return duration(now - Date.parse(stage.startedAt));
  }
  return "-";
}

function latestAttempt(operation, stageName) {
  const attempts = (operation.timeline || []).filter((t) => t.stage === stageName);
  return attempts.length ? attempts[attempts.length - 1] : null;
}

function errorText(error) {
  if (!error) return null;
  const code = error.code || error.Error || "Error";
  const message = error.message || error.Cause || "";
  return h("span", { class: "stage-error" }, h("strong", {}, code), message ? `: ${message}` : "");
}

function stageNote(stage, operation) {
  if (stage.error) return errorText(stage.error);
  const latest = latestAttempt(operation, stage.name);
  if (stage.status === "RUNNING" && latest && latest.waitingFor) {
    const next = latest.nextLookAt ? ` (next look ${when(latest.nextLookAt)})` : "";
    return h("span", { class: "muted" }, `waiting for ${latest.waitingFor}${next}`);
  }
  return "";
}

function stagesTable(operation) {
  return table([
    ["Stage", (s) => h("span", { class: "stage-name" }, s.name)],
    ["Status", (s) => badge(s.status)],
    ["Attempts", (s) => String(s.attempts ?? 0)],
    ["Elapsed", (s) => stageElapsed(s, operation)],
    ["Note", (s) => stageNote(s, operation)],
  ], operation.stages || [], "No stages yet.", (s) => ({ "data-stage": s.name, "data-stage-status": s.status }));
}

function timelineTable(operation) {
  return table([
    ["Stage", (t) => t.stage],
    ["Attempt", (t) => String(t.attempt)],
    ["Status", (t) => badge(t.status)],
    ["Started", (t) => when(t.startedAt)],
    ["Took", (t) => between(t.startedAt, t.endedAt)],
    ["Looks", (t) => String(t.looks ?? 0)],
    ["Waited for", (t) => t.waitingFor || ""],
    ["Error", (t) => errorText(t.error) || ""],
  ], operation.timeline || [], "No attempts recorded yet.");
}

/**
 * Follow operation `id` inside `container` until it ends (and again after a retry). Calls
 * `onEnd(operation)` when it reaches a final status. Returns a stop function.
 */
export function operationPanel(container, id, { onEnd = () => {}, compact = false } = {}) {
  let timer = null;
  let stopped = false;
  let ended = null;
  let shown = null; // the operation as last drawn: an unchanged one is not redrawn
  const actionError = h("div");

  const schedule = () => {
    if (!stopped) timer = setTimeout(refresh, POLL_MS);
  };

  async function act(verb) {
    actionError.replaceChildren();
    try {
      await call("POST", path`/operations/${id}/` + verb);
      ended = null;
      shown = null;
      clearTimeout(timer);
      await refresh();
    } catch (err) {
      fill(actionError, errorBox(err));
    }
  }

  function render(operation) {
    const running = !isTerminal(operation.status);
    const actions = h("div", { class: "toolbar" },
      operation.status === "FAILED" || operation.status === "CANCELLED"
        ? actionButton("Retry from the failed stage", () => act("retry"), { class: "primary", "data-action": "retry" }) : null,
      running ? actionButton("Cancel", () => act("cancel"), { "data-action": "cancel" }) : null,
      compact ? h("a", { href: `#/operations/${id}` }, "Open the operation") : null);
    const created = operation.createdAt;
    const finished = running ? null : operation.updatedAt;
    fill(container,
      h("div", { class: "op-header", "data-operation": id, "data-operation-status": operation.status },
        h("div", {}, h("span", { class: "muted small" }, "Operation"), h("span", { class: "mono" }, operation.id)),
        h("div", {}, h("span", { class: "muted small" }, "Kind"), h("span", {}, operation.kind)),
        operation.clusterTag ? h("div", {}, h("span", { class: "muted small" }, "Cluster"),
          h("a", { href: `#/clusters/${encodeURIComponent(operation.clusterTag)}` }, operation.clusterTag)) : null,
        h("div", {}, h("span", { class: "muted small" }, "Status"), h("span", { id: compact ? null : "op-status" }, badge(operation.status))),
        h("div", {}, h("span", { class: "muted small" }, "Started"), h("span", {}, when(created))),
        h("div", {}, h("span", { class: "muted small" }, running ? "Elapsed" : "Took"),
          h("span", {}, running ? duration(Date.now() - Date.parse(created)) : between(created, finished)))),
      operation.error ? h("div", { class: "error", role: "alert", "data-operation-error": operation.error.code || "" },
        errorText(operation.error)) : null,
      actions,
      actionError,
      stagesTable(operation),
      compact ? null : h("h3", {}, "Timeline: every attempt of every stage"),
      compact ? null : timelineTable(operation));
  }

  async function refresh() {
    if (stopped) return;
    try {
      const operation = await get(path`/operations/${id}`);
      if (stopped) return;
      const drawn = JSON.stringify(operation);
      if (drawn !== shown) {
        // Redrawn only when it changed, so a button is not replaced under the user's click.
        shown = drawn;
        render(operation);
      }
      if (isTerminal(operation.status)) {
        if (ended !== operation.status) {
          ended = operation.status;
          onEnd(operation);
        }
        // A retry or cancel from elsewhere is picked up by the next look at the page.
        return;
      }
    } catch (err) {
      if (stopped) return;
      shown = null;
      fill(container, errorBox(err));
      if (err.status && err.status < 500) return; // 404 and the like will not get better
    }
    schedule();
  }

  refresh();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** The page #/operations/{id}. */
export function operationPage(main, id, onLeave) {
  const panel = h("div", { class: "panel" }, h("p", { class: "muted" }, "Loading the operation..."));
  fill(main, h("h1", {}, "Operation"), panel);
  onLeave(operationPanel(panel, id));
}
