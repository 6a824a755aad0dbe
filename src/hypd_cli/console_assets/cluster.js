// The cluster page (#/clusters/{tag}/{section}): groups (list, scale, add with every
// create-time choice, delete), nodes and their health (and the repair policy), autoscaling,
// features (toggles), teams, jobs and endpoints (list, logs, submit, deploy, invoke,
// delete), operation history and events, and teardown (the plan, protection, a typed confirmation).
// A change that starts an operation shows its progress panel in place; the section reloads
// when it ends.

import { change, loadInto } from "./actions.js";
import { call, get, path, query } from "./api.js";
import { actionButton, badge, errorBox, fill, h, table, when } from "./dom.js";
import { groupFields } from "./groups.js";
import { operationPanel } from "./operation.js";
import { healthPolicyForm, teamsSection } from "./governance.js";
import { endpointFields, trainingJobFields } from "./workloads.js";

export const SECTIONS = [
  ["groups", "Instance groups"],
  ["nodes", "Nodes & health"],
  ["autoscaling", "Autoscaling"],
  ["features", "Features"],
  ["teams", "Teams"],
  ["workloads", "Jobs & endpoints"],
  ["operations", "Operations"],
  ["teardown", "Teardown"],
];

/** The zone of a cluster: its groups' (the first one's), else null. */
function clusterZone(groups) {
  const zones = groups.map((g) => g.availabilityZone).filter(Boolean);
  return zones.length ? zones[0] : null;
}

export async function clusterPage(main, tag, section, onLeave) {
  section = SECTIONS.some(([key]) => key === section) ? section : "groups";
  const header = h("div");
  const body = h("div", { class: "panel", id: `section-${section}`, "data-section": section });
  fill(main, header,
    h("nav", { class: "tabs" }, SECTIONS.map(([key, label]) => h("a", {
      href: `#/clusters/${encodeURIComponent(tag)}/${key}`, class: key === section ? "active" : "", "data-tab": key,
    }, label))),
    body);
  const stops = [];
  onLeave(() => stops.forEach((stop) => stop()));
  const ctx = { tag, body, follow: (container, id, onEnd) => stops.push(operationPanel(container, id, { onEnd, compact: true })) };

  try {
    const cluster = await get(path`/clusters/${tag}`);
    fill(header, h("h1", {}, cluster.tag, badge(cluster.status),
      h("span", { class: "muted small" }, `${cluster.source} cluster`,
        cluster.eks ? ` · EKS ${cluster.eks.name} ${cluster.eks.version || ""} ${cluster.eks.status}` : "",
        cluster.hyperpod ? ` · HyperPod ${cluster.hyperpod.name} ${cluster.hyperpod.status}` : "",
        cluster.region ? ` · ${cluster.region}` : "")),
    cluster.hyperpod && cluster.hyperpod.failureMessage ? h("div", { class: "error" }, cluster.hyperpod.failureMessage) : null);
    ctx.cluster = cluster;
  } catch (err) {
    fill(header, h("h1", {}, tag), errorBox(err));
    return;
  }
  await RENDERERS[section](ctx);
}

// -- groups --------------------------------------------------------------------------------

async function groupsSection(ctx) {
  const { tag, body } = ctx;
  const list = h("div", { id: "groups-list" });
  const progress = h("div", { id: "groups-progress" });
  const addForm = h("form", { class: "grid", id: "add-group-form", novalidate: true });
  const addError = h("div", { id: "add-group-error" });
  const preview = h("pre", { class: "json", id: "add-group-preview" });
  const addButton = h("button", { type: "submit", class: "primary", id: "add-group-submit" }, "Add group");
  fill(body,
    h("div", { class: "toolbar" }, h("h2", {}, "Instance groups"), h("span", { class: "spacer" }),
      actionButton("Refresh", () => reload())),
    list, progress,
    h("h2", { class: "mt" }, "Add a group"), addForm,
    h("div", { class: "stack mt" }, h("div", { class: "muted small" }, `POST /clusters/${tag}/instance-groups:`), preview, addError, addButton));

  let groups = [];
  async function reload() {
    await loadInto(list, async () => {
      groups = (await get(path`/clusters/${tag}/instance-groups`)).instanceGroups || [];
      fill(list, table([
        ["Name", (g) => h("strong", {}, g.name)],
        ["Type", (g) => g.instanceType || (g.instanceTypes || []).join(", ")],
        ["Nodes", (g) => `${g.currentCount}/${g.count}${g.minCount !== null && g.minCount !== undefined ? ` (min ${g.minCount})` : ""}`],
        ["Status", (g) => badge(g.status)],
        ["Capacity", (g) => g.capacity.type + (g.capacity.trainingPlanArn ? ` (${g.capacity.trainingPlanArn.split("/").pop()})` : "")],
        ["Zone", (g) => g.availabilityZone || "-"],
        ["Options", (g) => [g.efaOnly ? "EFA-only" : null, g.dedicatedSubnet ? "dedicated subnet" : null, g.autoscaled ? "autoscaled" : null,
          ...(g.deepHealthChecks || []), ...Object.entries(g.labels || {}).map(([k, v]) => `${k}=${v}`),
          ...(g.taints || []).map((t) => `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`)].filter(Boolean).join(", ") || "-"],
        ["Scale", (g) => scaleForm(g)],
        ["", (g) => actionButton("Delete", () => {
          if (!confirm(`Delete instance group ${g.name} of ${tag}? Its nodes are terminated.`)) return;
          return change(ctx, progress, "DELETE", path`/clusters/${tag}/instance-groups/${g.name}`, undefined, () => reload());
        }, { "data-delete-group": g.name })],
      ], groups, "No instance groups.", (g) => ({ "data-group": g.name })));
    });
  }

  function scaleForm(g) {
    const count = h("input", { type: "number", min: 0, max: 6758, value: g.count, class: "narrow", "data-scale-count": g.name });
    return h("span", { class: "inline" }, count, actionButton("Scale", () =>
      change(ctx, progress, "PATCH", path`/clusters/${tag}/instance-groups/${g.name}`, { count: Number(count.value) }, () => reload()),
    { "data-scale": g.name }));
  }

  await reload();
  const fields = groupFields(addForm, "add-group", { defaults: { name: "", count: 1 }, withZone: true });
  const update = () => { preview.textContent = JSON.stringify(fields.body(), null, 2); };
  fields.onChange(update);
  addForm.addEventListener("input", update);
  addForm.addEventListener("change", update);
  addForm.addEventListener("submit", (event) => event.preventDefault());
  addButton.addEventListener("click", async (event) => {
    event.preventDefault();
    addError.replaceChildren();
    await change(ctx, addError, "POST", path`/clusters/${tag}/instance-groups`, fields.body(), () => reload());
  });
  await loadInto(addError, async () => {
    const zones = (await get("/catalog/availability-zones")).availabilityZones || [];
    await fields.setZone(clusterZone(groups) || (zones[0] && zones[0].name), zones);
  });
  update();
}

// -- nodes and health ------------------------------------------------------------------------

async function nodesSection(ctx) {
  const { tag, body } = ctx;
  const progress = h("div");
  const nodesEl = h("div", { id: "nodes-list" });
  const healthEl = h("div", { id: "health-summary" });
  const policyEl = h("div", { id: "health-policy" });
  fill(body, h("div", { class: "toolbar" }, h("h2", {}, "Nodes"), h("span", { class: "spacer" }), actionButton("Refresh", () => reload())),
    nodesEl, progress, h("h2", { class: "mt" }, "Health"), healthEl,
    h("h2", { class: "mt" }, "Repair policy"), policyEl);

  async function reload() {
    await Promise.all([
      loadInto(nodesEl, async () => {
        const [nodes, health] = await Promise.all([get(path`/clusters/${tag}/nodes`), get(path`/clusters/${tag}/health`)]);
        const unhealthy = new Map((health.unhealthy || []).map((u) => [u.nodeId, u]));
        fill(nodesEl, table([
          ["Node", (n) => h("span", { class: "mono" }, n.nodeId)],
          ["Group", (n) => n.instanceGroup],
          ["Type", (n) => n.instanceType || "-"],
          ["Status", (n) => badge(n.status)],
          ["Health", (n) => unhealthy.has(n.nodeId) ? [badge(unhealthy.get(n.nodeId).status), " ", describeHealth(unhealthy.get(n.nodeId))] : badge("Healthy")],
          ["Launched", (n) => when(n.launchTime)],
          ["Actions", (n) => h("span", { class: "inline" },
            actionButton("Reboot", () => confirm(`Reboot ${n.nodeId}?`) && change(ctx, progress, "POST", path`/clusters/${tag}/nodes/${n.nodeId}/reboot`, undefined, () => reload())),
            actionButton("Replace", () => confirm(`Replace ${n.nodeId}? It is terminated and a new instance takes its place.`) && change(ctx, progress, "POST", path`/clusters/${tag}/nodes/${n.nodeId}/replace`, undefined, () => reload())),
            actionButton("Delete", () => confirm(`Delete ${n.nodeId}? It is terminated and its group ${n.instanceGroup} shrinks by one.`) && change(ctx, progress, "DELETE", path`/clusters/${tag}/nodes/${n.nodeId}`, undefined, () => reload()), { "data-delete-node": n.nodeId }))],
        ], nodes.nodes || [], "No nodes.", (n) => ({ "data-node": n.nodeId })));
        renderHealth(health);
      }),
    ]);
  }

  function describeHealth(entry) {
    const latest = entry.latest || {};
    return h("span", { class: "small" }, [latest.reason, latest.recommendation || latest.action].filter(Boolean).join(" · "));
  }

  function renderHealth(health) {
    fill(healthEl,
      h("dl", { class: "kv" },
        h("dt", {}, "Nodes"), h("dd", {}, String(health.nodes)),
        h("dt", {}, "By health"), h("dd", {}, Object.entries(health.counts || {}).map(([k, v]) => `${k}: ${v}`).join(", ") || "-"),
        h("dt", {}, "Repair policy"), h("dd", {}, `${health.policy.action || "notify"}${health.policyIsDefault ? " (default)" : ""}, at most ${health.policy.maxActionsPerHour ?? "-"} an hour`),
        h("dt", {}, "Add-ons"), h("dd", {}, Object.entries(health.addons || {}).map(([k, v]) => h("span", {}, `${k} `, badge(v.status || v), " ")))),
      h("h3", {}, "Recent warnings and errors"),
      table([
        ["Time", (e) => when(e.time || e.eventTime)],
        ["Type", (e) => e.type || e.eventType || "-"],
        ["Message", (e) => e.message || e.reason || JSON.stringify(e)],
      ], health.recentEvents || [], "No recent warnings or errors."));
  }

  await Promise.all([reload(), healthPolicyForm(ctx, policyEl)]);
}

// -- autoscaling -----------------------------------------------------------------------------

async function autoscalingSection(ctx) {
  const { tag, body } = ctx;
  const view = h("div", { id: "autoscaling-view" });
  const progress = h("div");
  fill(body, h("h2", {}, "Managed Karpenter autoscaling"), view, progress);

  async function reload() {
    await loadInto(view, async () => {
      const [auto, groups] = await Promise.all([get(path`/clusters/${tag}/autoscaling`), get(path`/clusters/${tag}/instance-groups`)]);
      const boxes = (groups.instanceGroups || []).map((g) => h("label", {}, h("input", { type: "checkbox", value: g.name, checked: (auto.instanceGroups || []).includes(g.name) }), g.name));
      const policy = h("select", { id: "autoscaling-policy" }, ["", "WhenEmpty", "WhenEmptyOrUnderutilized"].map((p) => h("option", { value: p, selected: p === (auto.consolidationPolicy || "") }, p || "default")));
      const after = h("input", { type: "text", id: "autoscaling-after", placeholder: "e.g. 5m or Never", value: auto.consolidateAfter || "" });
      fill(view,
        h("dl", { class: "kv" },
          h("dt", {}, "Enabled"), h("dd", {}, badge(auto.enabled ? "enabled" : "off")),
          h("dt", {}, "Status"), h("dd", {}, badge(auto.status)),
          h("dt", {}, "Groups"), h("dd", {}, (auto.instanceGroups || []).join(", ") || "-"),
          h("dt", {}, "Consolidation"), h("dd", {}, auto.consolidationPolicy ? `${auto.consolidationPolicy}, after ${auto.consolidateAfter || "-"}` : "-"),
          auto.failureMessage ? [h("dt", {}, "Failure"), h("dd", {}, auto.failureMessage)] : null),
        h("h3", {}, auto.enabled ? "Change" : "Enable"),
        h("div", { class: "stack" },
          h("div", { class: "choices" }, h("span", { class: "muted" }, "Groups Karpenter scales:"), boxes),
          h("div", { class: "choices" },
            h("label", { class: "inline" }, h("span", { class: "muted" }, "Consolidation policy"), policy),
            h("label", { class: "inline" }, h("span", { class: "muted" }, "Consolidate after"), after)),
          h("div", { class: "toolbar" },
            actionButton(auto.enabled ? "Apply" : "Enable autoscaling", () => {
              const request = { enabled: true };
              const chosen = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
              if (chosen.length) request.instanceGroups = chosen;
              if (policy.value) request.consolidationPolicy = policy.value;
              if (after.value.trim()) request.consolidateAfter = after.value.trim();
              return change(ctx, progress, "PUT", path`/clusters/${tag}/autoscaling`, request, () => reload());
            }, { class: "primary", id: "autoscaling-enable" }),
            auto.enabled ? actionButton("Disable autoscaling", () => change(ctx, progress, "PUT", path`/clusters/${tag}/autoscaling`, { enabled: false }, () => reload()), { id: "autoscaling-disable" }) : null)));
    });
  }

  await reload();
}

// -- features --------------------------------------------------------------------------------

const FEATURE_TITLES = {
  trainingOperator: "Training operator",
  inferenceOperator: "Inference operator",
  tieredCheckpointing: "Tiered checkpointing",
  observability: "Observability",
  taskGovernance: "Task governance",
};
const VIEW_KEYS = new Set(["enabled", "status", "version", "requires", "requiredBy", "problems"]);

async function featuresSection(ctx) {
  const { tag, body } = ctx;
  const cards = h("div", { class: "cards", id: "features-list" });
  const progress = h("div", { id: "features-progress" });
  const prerequisites = h("div");
  fill(body, h("div", { class: "toolbar" }, h("h2", {}, "Managed features"), h("span", { class: "spacer" }), actionButton("Refresh", () => reload())),
    h("p", { class: "muted small" }, `Each toggle sends only that feature (PATCH /clusters/${tag}/features); prerequisites are installed first and removed only when nothing needs them.`),
    cards, progress, h("h3", {}, "Shared prerequisites"), prerequisites);

  async function reload() {
    await loadInto(cards, async () => {
      const view = await get(path`/clusters/${tag}/features`);
      fill(cards, Object.entries(view.features || {}).map(([name, f]) => {
        const settings = Object.entries(f).filter(([k]) => !VIEW_KEYS.has(k)).map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : v}`);
        return h("div", { class: "card", "data-feature": name, "data-enabled": String(Boolean(f.enabled)) },
          h("h3", {}, FEATURE_TITLES[name] || name, badge(f.enabled ? "enabled" : "off")),
          h("div", { class: "small muted" }, [f.status ? `status ${f.status}` : null, f.version ? `version ${f.version}` : null].filter(Boolean).join(" · ") || "\u00a0"),
          settings.length ? h("div", { class: "small" }, settings.join(", ")) : null,
          (f.requires || []).length ? h("div", { class: "small" }, "Requires: ", f.requires.join(", ")) : null,
          (f.requiredBy || []).length ? h("div", { class: "small" }, "Required by: ", f.requiredBy.join(", ")) : null,
          (f.problems || []).map((p) => h("div", { class: "small error" }, typeof p === "string" ? p : JSON.stringify(p))),
          h("div", { class: "toolbar mt-s" }, actionButton(f.enabled ? "Disable" : "Enable",
            () => change(ctx, progress, "PATCH", path`/clusters/${tag}/features`, { [name]: { enabled: !f.enabled } }, () => reload()),
            { class: f.enabled ? "" : "primary", "data-toggle": name })));
      }));
      fill(prerequisites, table([
        ["Add-on", ([n]) => n],
        ["Installed", ([, p]) => badge(p.installed ? "installed" : "no")],
        ["Status", ([, p]) => badge(p.status)],
        ["Installed by", ([, p]) => p.installedBy || "-"],
        ["Required by", ([, p]) => (p.requiredBy || []).join(", ") || "-"],
      ], Object.entries(view.prerequisites || {}), "None."));
    });
  }

  await reload();
}

// -- workloads -------------------------------------------------------------------------------

async function workloadsSection(ctx) {
  const { tag, body } = ctx;
  const jobs = h("div", { id: "jobs-list" });
  const endpoints = h("div", { id: "endpoints-list" });
  const progress = h("div", { id: "workloads-progress" });
  const forms = h("div", { id: "workload-forms" });
  const detail = h("div", { id: "workload-detail" });
  fill(body, h("div", { class: "toolbar" }, h("h2", {}, "Training jobs"), h("span", { class: "spacer" }), actionButton("Refresh", () => reload())),
    jobs, h("h2", { class: "mt" }, "Inference endpoints"), endpoints, progress, detail, forms);

  /** The last lines of the job's first pod (or why there are none yet). */
  async function showLogs(j) {
    fill(detail, h("p", { class: "muted" }, `Reading the logs of ${j.name}...`));
    await loadInto(detail, async () => {
      const logs = await get(`${path`/clusters/${tag}/training-jobs/${j.name}/logs`}${query({ namespace: j.namespace, tail: 200 })}`);
      fill(detail, h("div", { class: "panel" },
        h("div", { class: "toolbar" }, h("h3", {}, `Logs of ${logs.name}, pod ${logs.pod} (the last 200 lines)`), h("span", { class: "spacer" }),
          actionButton("Refresh", () => showLogs(j)), actionButton("Close", () => detail.replaceChildren())),
        h("pre", { class: "json", id: "job-logs" }, logs.logs || "(no output yet)")));
    });
  }

  /** A request to a registered endpoint: JSON when it parses, else text. */
  function showInvoke(e) {
    const request = h("textarea", { id: "invoke-body", placeholder: '{"inputs": "What is HyperPod?"}' });
    const answer = h("div", { id: "invoke-answer" });
    fill(detail, h("div", { class: "panel" },
      h("div", { class: "toolbar" }, h("h3", {}, `Invoke ${e.name} (SageMaker endpoint ${e.sageMaker.endpointName})`), h("span", { class: "spacer" }),
        actionButton("Close", () => detail.replaceChildren())),
      request,
      h("div", { class: "toolbar mt" }, actionButton("Send", async () => {
        let sent;
        try {
          sent = JSON.parse(request.value);
        } catch {
          sent = request.value;
        }
        await loadInto(answer, async () => {
          const { body: result } = await call("POST", `${path`/clusters/${tag}/inference-endpoints/${e.name}/invoke`}${query({ namespace: e.namespace })}`, { body: sent });
          fill(answer, h("pre", { class: "json", id: "invoke-result" }, typeof result.body === "string" ? result.body : JSON.stringify(result.body, null, 2)));
        });
      }, { class: "primary", id: "invoke-send" })),
      answer));
  }

  async function remove(what, apiPath) {
    if (!confirm(`Delete ${what}?`)) return;
    await change(ctx, progress, "DELETE", apiPath, undefined, () => reload());
  }

  async function reload() {
    await Promise.all([
      loadInto(jobs, async () => {
        const list = (await get(path`/clusters/${tag}/training-jobs`)).jobs || [];
        fill(jobs, table([
          ["Name", (j) => h("strong", {}, j.name)], ["Namespace", (j) => j.namespace], ["Phase", (j) => badge(j.phase)],
          ["Restarts", (j) => String(j.restarts)], ["Type", (j) => `${j.nodeCount ?? "?"} × ${j.instanceType || "-"}`],
          ["Started", (j) => when(j.startTime)],
          ["", (j) => h("span", { class: "inline" },
            actionButton("Logs", () => showLogs(j), { "data-logs-job": j.name }),
            actionButton("Delete", () => remove(`training job ${j.name}`, `${path`/clusters/${tag}/training-jobs/${j.name}`}${query({ namespace: j.namespace })}`), { "data-delete-job": j.name }))],
        ], list, "No training jobs.", (j) => ({ "data-job": j.name, "data-job-phase": j.phase || "" })));
      }),
      loadInto(endpoints, async () => {
        const list = (await get(path`/clusters/${tag}/inference-endpoints`)).endpoints || [];
        fill(endpoints, table([
          ["Name", (e) => h("strong", {}, e.name)], ["Namespace", (e) => e.namespace], ["State", (e) => badge(e.state)],
          ["Replicas", (e) => `${e.readyReplicas}/${e.replicas} ready`], ["Type", (e) => e.instanceType || "-"],
          ["SageMaker", (e) => (e.sageMaker ? [e.sageMaker.endpointName, " ", badge(e.sageMaker.state)] : "-")],
          ["", (e) => h("span", { class: "inline" },
            // Only an endpoint registered with SageMaker can be invoked (the API says where).
            e.invoke ? actionButton("Invoke", () => showInvoke(e), { "data-invoke-endpoint": e.name }) : null,
            actionButton("Delete", () => remove(`inference endpoint ${e.name}`, `${path`/clusters/${tag}/inference-endpoints/${e.name}`}${query({ namespace: e.namespace })}`), { "data-delete-endpoint": e.name }))],
        ], list, "No inference endpoints.", (e) => ({ "data-endpoint": e.name, "data-endpoint-state": e.state || "" })));
      }),
    ]);
  }

  await reload();
  await loadInto(forms, async () => {
    const [groups, teams] = await Promise.all([
      get(path`/clusters/${tag}/instance-groups`).then((b) => b.instanceGroups || []),
      // Teams exist only with task governance; without it a job simply has no team.
      get(path`/clusters/${tag}/teams`).then((b) => b.teams || [], () => []),
    ]);
    fill(forms,
      workloadForm(ctx, "job", "Submit a training job", path`/clusters/${tag}/training-jobs`, "Submit job",
        (form) => trainingJobFields(form, groups, teams), () => reload()),
      workloadForm(ctx, "endpoint", "Deploy an inference endpoint", path`/clusters/${tag}/inference-endpoints`, "Deploy endpoint",
        (form) => endpointFields(form, groups, teams), () => reload()));
  });
}

/** A workload's form: its fields, the request as it will be sent, and the button that sends it
 * (the operation is followed under the button; `done` at its end). */
function workloadForm(ctx, prefix, title, apiPath, label, makeFields, done) {
  const form = h("form", { class: "grid", id: `${prefix}-form`, novalidate: true });
  const preview = h("pre", { class: "json", id: `${prefix}-preview` });
  const result = h("div", { id: `${prefix}-result` });
  const fields = makeFields(form);
  const update = () => { preview.textContent = JSON.stringify(fields.body(), null, 2); };
  form.addEventListener("input", update);
  form.addEventListener("change", update);
  form.addEventListener("submit", (event) => event.preventDefault());
  const send = actionButton(label, async () => {
    await change(ctx, result, "POST", apiPath, fields.body(), done);
  }, { class: "primary", id: `${prefix}-submit` });
  update();
  return h("details", { class: "panel mt", id: `${prefix}-details` },
    h("summary", {}, h("strong", {}, title)),
    h("div", { class: "mt" }, form),
    h("div", { class: "stack mt" }, h("div", { class: "muted small" }, `POST ${apiPath}:`), preview, send, result));
}

// -- operations ------------------------------------------------------------------------------

async function operationsSection(ctx) {
  const { tag, body } = ctx;
  const list = h("div", { id: "operations-list" });
  const more = h("div");
  const events = h("div", { class: "mt", id: "cluster-events" });
  fill(body, h("div", { class: "toolbar" }, h("h2", {}, "Operation history"), h("span", { class: "spacer" }), actionButton("Refresh", () => load())), list, more, events);
  let rows = [];

  async function load(nextToken) {
    await loadInto(list, async () => {
      const page = await get(`/operations${query({ clusterTag: tag, limit: 25, nextToken })}`);
      rows = nextToken ? rows.concat(page.operations || []) : page.operations || [];
      fill(list, table([
        ["Operation", (o) => h("a", { href: `#/operations/${o.id}`, class: "mono" }, o.id)],
        ["Kind", (o) => o.kind],
        ["Status", (o) => badge(o.status)],
        ["Started", (o) => when(o.createdAt)],
        ["Updated", (o) => when(o.updatedAt)],
        ["Error", (o) => (o.error ? `${o.error.code || ""}: ${o.error.message || ""}` : "")],
      ], rows, "No operations."));
      fill(more, page.nextToken ? actionButton("Older operations", () => load(page.nextToken)) : null);
    });
  }

  await Promise.all([load(), eventsPanel(ctx, events)]);
}

const EVENT_KINDS = {
  "hypd Operation State Change": "operation",
  "hypd Cluster State Change": "cluster",
  "hypd Node Health Change": "node health",
};

/** What an event says, in a line: its subject, the change, and the operation it links to. */
function eventLine(event) {
  const d = event.detail || {};
  const operation = d.operationId || (d.repair && d.repair.operationId);
  let what;
  if (event["detail-type"] === "hypd Node Health Change") {
    what = [`${d.nodeId} (${d.instanceGroup || "-"}): ${d.previousHealth || "-"} → `, badge(d.health), d.reason ? ` ${d.reason}` : "",
      d.repair ? ` · repair by ${d.repair.by}${d.repair.action ? ` (${d.repair.action})` : ""}` : ""];
  } else if (event["detail-type"] === "hypd Operation State Change") {
    what = [`${d.kind}: ${d.previousStatus || "-"} → `, badge(d.status), d.stage ? ` at ${d.stage}` : "",
      d.error ? ` · ${d.error.code || ""}: ${d.error.message || ""}` : ""];
  } else {
    what = [`${d.tag}: ${d.previousStatus || "-"} → `, badge(d.status)];
  }
  return [what, operation ? [" · ", h("a", { href: `#/operations/${operation}`, class: "mono" }, operation)] : null];
}

/** The cluster's recent events (hypd's own, as EventBridge delivers them), and newer ones on
 * demand through the answer's cursor. */
async function eventsPanel(ctx, el) {
  const { tag } = ctx;
  let rows = [];
  let next = null;
  const list = h("div", { id: "events-list" });
  const toolbar = h("div", { class: "toolbar" }, h("h2", {}, "Events"), h("span", { class: "spacer" }),
    actionButton("Newer events", () => load(next), { id: "events-newer" }));
  fill(el, toolbar, h("p", { class: "muted small" }, "hypd's operation, cluster and node health changes, newest last: what EventBridge rules receive."), list);

  async function load(since) {
    await loadInto(list, async () => {
      const page = await get(`/events${query({ cluster: tag, limit: 50, since })}`);
      rows = since ? rows.concat(page.events || []) : page.events || [];
      next = page.next || since || null;
      fill(list, table([
        ["Time", (e) => when(e.time)],
        ["Kind", (e) => EVENT_KINDS[e["detail-type"]] || e["detail-type"]],
        ["What", (e) => eventLine(e)],
      ], rows, "No events recorded for this cluster.", (e) => ({ "data-event": e.id })));
    });
  }

  await load(null);
}

// -- teardown --------------------------------------------------------------------------------

async function teardownSection(ctx) {
  const { tag, body } = ctx;
  const planEl = h("div", { id: "teardown-plan" });
  const progress = h("div", { id: "teardown-progress" });
  const force = h("input", { type: "checkbox", id: "teardown-force" });
  fill(body, h("h2", {}, "Delete the cluster"), planEl, progress);

  async function reload() {
    await loadInto(planEl, async () => {
      const plan = await get(`${path`/clusters/${tag}/teardown-plan`}${query({ force: force.checked ? "true" : null })}`);
      const codes = new Set((plan.blockers || []).map((b) => b.code));
      const protectedNow = codes.has("DeletionProtected");
      // A discovered cluster is never deleted by hypd: its record can only be forgotten.
      const discovered = codes.has("NotCreatedByHypd");
      const confirmInput = h("input", { type: "text", id: "teardown-confirm", placeholder: tag, autocomplete: "off" });
      const deleteButton = h("button", { type: "button", class: "danger", id: "teardown-delete", disabled: true }, discovered ? `Forget ${tag}` : `Delete ${tag}`);
      confirmInput.addEventListener("input", () => { deleteButton.disabled = confirmInput.value !== tag || !(plan.deletable || discovered); });
      const target = `${path`/clusters/${tag}`}${query({ force: force.checked ? "true" : null, forget: discovered ? "true" : null })}`;
      // A forgotten cluster is gone from hypd (200): back to the list.
      deleteButton.addEventListener("click", () => change(ctx, progress, "DELETE", target, undefined, () => { if (discovered) location.hash = "#/clusters"; }));
      const protection = h("div", { class: "toolbar", id: "teardown-protection", "data-protected": String(protectedNow) },
        h("span", {}, "Deletion protection: ", badge(protectedNow ? "on" : "off")),
        actionButton(protectedNow ? "Turn protection off" : "Turn protection on",
          () => change(ctx, progress, "PUT", path`/clusters/${tag}/protection`, { enabled: !protectedNow }, () => reload()),
          { id: "teardown-protect" }));
      fill(planEl, protection,
        discovered ? h("p", { class: "notice" }, "hypd did not create this cluster, so it deletes none of it. Forget removes hypd's record only: every resource stays as it is.") : null,
        plan.blockers && plan.blockers.length ? h("div", { class: "error" }, h("strong", {}, "Blocked now:"),
          h("ul", {}, plan.blockers.map((b) => h("li", {}, h("code", {}, b.code), ": ", b.message)))) : null,
        h("h3", {}, "Deleted, in this order"),
        table([
          ["Stage", (s) => h("strong", {}, s.stage)],
          ["Resources", (s) => (s.resources || []).map((r) => h("div", { class: "small" }, `${r.type} `, h("span", { class: "mono" }, r.name)))],
        ], plan.steps || [], "Nothing to delete."),
        (plan.parallel || []).length ? h("p", { class: "muted small" }, "In parallel: ", plan.parallel.map((p) => (Array.isArray(p) ? p.join(" + ") : String(p))).join("; ")) : null,
        h("h3", {}, "Kept"),
        table([["Type", (k) => k.type], ["Name", (k) => h("span", { class: "mono" }, k.name)], ["Why", (k) => k.reason]], plan.kept || [], "Nothing kept."),
        h("div", { class: "stack mt" },
          discovered ? null : h("label", { class: "inline" }, force, "Force: stop running jobs and endpoints first"),
          h("div", {}, "Type the tag ", h("code", {}, tag), " to confirm:"),
          h("div", { class: "inline" }, confirmInput, deleteButton)));
      force.onchange = () => reload();
    });
  }

  await reload();
}

const RENDERERS = {
  groups: groupsSection,
  nodes: nodesSection,
  autoscaling: autoscalingSection,
  features: featuresSection,
  teams: teamsSection,
  workloads: workloadsSection,
  operations: operationsSection,
  teardown: teardownSection,
};
