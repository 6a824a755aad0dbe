// The cluster page's governance: task governance's teams (their compute quotas: list, set,
// delete) and the health policy (what hypd does when HyperPod recommends a repair it does not
// take). Both write through the same REST routes as the CLI's `hypd teams` and
// `hypd health set-policy`.

import { change, loadInto } from "./actions.js";
import { get, path } from "./api.js";
import { actionButton, badge, fill, h, lines, table } from "./dom.js";

const STRATEGIES = ["LendAndBorrow", "Lend", "DontLend"];
const PREEMPTION = ["LowerPriority", "Never"];
const ACTIONS = [
  ["notify", "notify: only tell (events, the health view)"],
  ["reboot", "reboot: reboot a node HyperPod recommends rebooting"],
  ["replace", "replace: reboot or replace as HyperPod recommends"],
];

/** Quota lines "ml.g6.4xlarge=2" as QuotaResource objects. */
function parseQuota(text) {
  return lines(text).map((line) => {
    const [type, count] = line.split("=").map((part) => part.trim());
    return { instanceType: type, count: count === undefined || count === "" ? NaN : Number(count) };
  });
}

export async function teamsSection(ctx) {
  const { tag, body } = ctx;
  const list = h("div", { id: "teams-list" });
  const progress = h("div", { id: "teams-progress" });
  const form = h("form", { class: "grid", id: "team-form", novalidate: true });
  const preview = h("pre", { class: "json", id: "team-preview" });
  const result = h("div", { id: "team-result" });
  const routeEl = h("div", { class: "muted small" });
  const submit = actionButton("Set quota", () => change(ctx, result, "PUT", route(), request(), () => reload()), { class: "primary", id: "team-submit" });
  fill(body,
    h("div", { class: "toolbar" }, h("h2", {}, "Teams (task governance)"), h("span", { class: "spacer" }), actionButton("Refresh", () => reload())),
    list, progress,
    h("h2", { class: "mt" }, "Set a team's quota"),
    h("p", { class: "muted small" }, "Needs task governance on (Features). A team's jobs are queued in its namespace, hyperpod-ns-TEAM."),
    form, h("div", { class: "stack mt" }, routeEl, preview, submit, result));

  const name = h("input", { type: "text", id: "team-name", placeholder: "e.g. research" });
  const quota = h("textarea", { id: "team-quota", placeholder: "ml.g6.4xlarge=2\none instance type=count a line" });
  const strategy = h("select", { id: "team-strategy" }, STRATEGIES.map((s) => h("option", { value: s }, s)));
  const borrow = h("input", { type: "number", id: "team-borrow", min: 1, max: 10000, placeholder: "percent (optional)" });
  const weight = h("input", { type: "number", id: "team-weight", min: 0, max: 100, placeholder: "0-100 (optional)" });
  const preempt = h("select", { id: "team-preempt" }, PREEMPTION.map((p) => h("option", { value: p }, p)));
  const active = h("input", { type: "checkbox", id: "team-active", checked: true });
  const quotaHint = h("div", { class: "hint", id: "team-quota-hint" });
  form.append(
    h("label", { for: name.id }, "Team"), h("div", {}, name),
    h("label", { for: quota.id }, "Quota"), h("div", {}, quota, quotaHint),
    h("label", { for: strategy.id }, "Sharing"), h("div", { class: "choices" }, strategy, h("span", { class: "inline" }, "borrow limit", borrow)),
    h("label", { for: weight.id }, "Fair-share weight"), h("div", {}, weight),
    h("label", { for: preempt.id }, "Preempt the team's tasks"), h("div", {}, preempt),
    h("label", { for: active.id }, "Active"), h("div", {}, active));

  function request() {
    const team = { resources: parseQuota(quota.value), sharing: { strategy: strategy.value } };
    if (borrow.value !== "") team.sharing.borrowLimit = Number(borrow.value);
    if (weight.value !== "") team.fairShareWeight = Number(weight.value);
    team.preemptTeamTasks = preempt.value;
    if (!active.checked) team.active = false;
    return team;
  }

  const route = () => path`/clusters/${tag}/teams/${name.value.trim() || "TEAM"}`;
  function update() {
    routeEl.textContent = `PUT ${route()}:`;
    preview.textContent = JSON.stringify(request(), null, 2);
  }
  form.addEventListener("input", update);
  form.addEventListener("change", update);
  form.addEventListener("submit", (event) => event.preventDefault());

  async function reload() {
    await loadInto(list, async () => {
      const teams = (await get(path`/clusters/${tag}/teams`)).teams || [];
      fill(list, table([
        ["Team", (t) => h("strong", {}, t.name)],
        ["Status", (t) => badge(t.status)],
        ["Quota", (t) => t.resources.map((r) => `${r.count} × ${r.instanceType}`).join(", ") || "-"],
        ["Sharing", (t) => [t.sharing.strategy, t.sharing.borrowLimit ? `borrow ≤ ${t.sharing.borrowLimit}%` : null].filter(Boolean).join(", ") || "-"],
        ["Namespace / queue", (t) => `${t.namespace} / ${t.queue}`],
        ["", (t) => actionButton("Delete", () => {
          if (!confirm(`Delete team ${t.name}'s quota? Its queued jobs lose their share.`)) return;
          return change(ctx, progress, "DELETE", path`/clusters/${tag}/teams/${t.name}`, undefined, () => reload());
        }, { "data-delete-team": t.name })],
      ], teams, "No teams.", (t) => ({ "data-team": t.name })));
    });
  }

  await reload();
  await loadInto(quotaHint, async () => {
    const groups = (await get(path`/clusters/${tag}/instance-groups`)).instanceGroups || [];
    quotaHint.textContent = `The cluster's types: ${groups.map((g) => `${g.instanceType} (${g.name}, ${g.count})`).join(", ") || "none"}`;
  });
  update();
}

/** The health policy's form in `el`: shows the policy in force, and sets a new one. */
export async function healthPolicyForm(ctx, el) {
  const { tag } = ctx;
  const state = h("p", { class: "muted small", id: "policy-state" });
  const result = h("div", { id: "policy-result" });
  const describe = (view) => {
    state.textContent = view.default ? "The default policy: none was set." : "The cluster's own policy.";
    state.dataset.default = String(view.default);
  };
  await loadInto(el, async () => {
    const view = await get(path`/clusters/${tag}/health-policy`);
    const action = h("select", { id: "policy-action" }, ACTIONS.map(([value, label]) => h("option", { value, selected: value === view.policy.action }, label)));
    const perHour = h("input", { type: "number", id: "policy-per-hour", min: 1, max: 100, value: view.policy.maxActionsPerHour });
    const cooldown = h("input", { type: "number", id: "policy-cooldown", min: 1, max: 10080, value: view.policy.nodeCooldownMinutes });
    describe(view);
    fill(el, state,
      h("div", { class: "choices" },
        h("label", { class: "inline" }, h("span", { class: "muted" }, "When HyperPod recommends a repair it does not take"), action),
        h("label", { class: "inline" }, h("span", { class: "muted" }, "at most"), perHour, "repairs an hour"),
        h("label", { class: "inline" }, h("span", { class: "muted" }, "a node at most once in"), cooldown, "minutes")),
      h("div", { class: "toolbar mt" }, actionButton("Save policy", () => change(ctx, result, "PUT", path`/clusters/${tag}/health-policy`,
        { action: action.value, maxActionsPerHour: Number(perHour.value), nodeCooldownMinutes: Number(cooldown.value) }, describe),
      { class: "primary", id: "policy-save" })),
      result);
  });
}
