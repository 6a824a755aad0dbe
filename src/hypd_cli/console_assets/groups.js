// An instance group's create-time choices, shared by the create form and the cluster page's
// "add a group" form: name, instance type (from the catalogue of the zone, accelerated types
// first, searchable), count, capacity (on-demand, spot, or a training plan of that zone and
// type), EFA-only, dedicated subnet, deep health checks, labels and taints.

import { get, query } from "./api.js";
import { gib, h, lines, parsePairs } from "./dom.js";

const DEEP_HEALTH_CHECKS = ["InstanceStress", "InstanceConnectivity", "MultiNodeTrainingValidation"];
const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/** The accelerator of a catalogue entry: {key, label, count, memoryMiB} or null (CPU only). */
export function accelerator(type) {
  const gpu = (type.gpus || [])[0];
  if (gpu) return { key: `${gpu.manufacturer} ${gpu.name}`, label: `${gpu.count}× ${gpu.name}`, count: gpu.count, memoryMiB: gpu.memoryMiB };
  const neuron = (type.neuronDevices || [])[0];
  if (neuron) return { key: `AWS ${neuron.name}`, label: `${neuron.count}× ${neuron.name}`, count: neuron.count, memoryMiB: neuron.memoryMiB };
  return null;
}

/** The option text of an instance type: its name, accelerators, memory and EFA. */
export function describeType(type) {
  const acc = accelerator(type);
  const parts = [type.instanceType];
  parts.push(acc ? `${acc.label}${acc.memoryMiB ? ` (${gib(acc.memoryMiB)})` : ""}` : "no accelerator");
  if (type.vCpus) parts.push(`${type.vCpus} vCPU`);
  parts.push(`${gib(type.memoryMiB)} memory`);
  if (type.efaSupported) parts.push(type.maximumEfaInterfaces ? `EFA ×${type.maximumEfaInterfaces}` : "EFA");
  return parts.join(" · ");
}

/**
 * The types grouped for the picker: accelerated groups first (by accelerator, largest memory
 * first), CPU-only last; within a group, by accelerator count then memory. Only the types
 * whose name or accelerator contains `search` (case-insensitive).
 */
export function groupTypes(types, search = "") {
  const needle = search.trim().toLowerCase();
  const groups = new Map();
  for (const type of types) {
    const acc = accelerator(type);
    const key = acc ? acc.key : "CPU only";
    const haystack = `${type.instanceType} ${acc ? acc.key : "cpu"}`.toLowerCase();
    if (needle && !haystack.includes(needle)) continue;
    if (!groups.has(key)) groups.set(key, { key, accelerated: Boolean(acc), memory: acc ? acc.memoryMiB || 0 : 0, types: [] });
    groups.get(key).types.push(type);
  }
  const sorted = [...groups.values()].sort((a, b) =>
    (b.accelerated - a.accelerated) || (b.memory - a.memory) || a.key.localeCompare(b.key));
  for (const group of sorted) {
    group.types.sort((a, b) => ((accelerator(a)?.count || 0) - (accelerator(b)?.count || 0))
      || ((a.memoryMiB || 0) - (b.memoryMiB || 0)) || a.instanceType.localeCompare(b.instanceType));
  }
  return sorted;
}

function parseTaints(text) {
  // key[=value]:Effect, one a line
  return lines(text).map((line) => {
    const [spec, effect] = line.split(":");
    const [key, value] = spec.split("=");
    const taint = { key: key.trim(), effect: (effect || "NoSchedule").trim() };
    if (value !== undefined && value.trim()) taint.value = value.trim();
    return taint;
  });
}

/**
 * The fields of one group inside `form` (a form.grid). `prefix` makes the element ids unique.
 * Returns {setZone(zone), body(), onChange(fn)}: body() is the group's request object.
 */
export function groupFields(form, prefix, { defaults = {}, withZone = false } = {}) {
  let homeZone = null;
  let types = [];
  let plans = [];
  let zone = null;
  const listeners = [];
  const changed = () => listeners.forEach((fn) => fn());

  const name = h("input", { type: "text", id: `${prefix}-name`, value: defaults.name ?? "workers", placeholder: "e.g. spot-burst", required: true, oninput: changed });
  const search = h("input", { type: "search", class: "wide", id: `${prefix}-type-search`, placeholder: "Search: h100, a10g, trainium, p5, g6...", oninput: () => renderTypes() });
  const typeSelect = h("select", { id: `${prefix}-type`, size: 12, onchange: () => { renderPlans(); renderEfa(); changed(); } });
  const typeInfo = h("div", { class: "hint", id: `${prefix}-type-info` });
  const count = h("input", { type: "number", id: `${prefix}-count`, min: 0, max: 6758, value: defaults.count ?? 1, oninput: changed });
  const capacityName = `${prefix}-capacity`;
  const capacityRadio = (value, label) => h("label", {}, h("input", { type: "radio", name: capacityName, value, id: `${prefix}-capacity-${value}`, checked: value === "on-demand", onchange: () => { renderPlans(); changed(); } }), label);
  const planSelect = h("select", { id: `${prefix}-plan`, onchange: changed });
  const planHint = h("div", { class: "hint", id: `${prefix}-plan-hint` });
  const efaOnly = h("input", { type: "checkbox", id: `${prefix}-efa-only`, onchange: changed });
  const efaHint = h("span", { class: "hint" });
  const dedicated = h("input", { type: "checkbox", id: `${prefix}-dedicated-subnet`, onchange: changed });
  const checks = DEEP_HEALTH_CHECKS.map((c) => h("input", { type: "checkbox", value: c, id: `${prefix}-dhc-${c}`, onchange: changed }));
  const labels = h("textarea", { id: `${prefix}-labels`, placeholder: "team=research\none key=value a line", oninput: changed });
  const taints = h("textarea", { id: `${prefix}-taints`, placeholder: "dedicated=gpu:NoSchedule\nkey[=value]:" + TAINT_EFFECTS.join("|"), oninput: changed });
  const zoneSelect = withZone ? h("select", { id: `${prefix}-zone`, onchange: () => { loadTypes(zoneSelect.value || homeZone); changed(); } }) : null;

  function selectedType() {
    return types.find((t) => t.instanceType === typeSelect.value) || null;
  }

  function capacityType() {
    const checked = form.querySelector(`input[name="${capacityName}"]:checked`);
    return checked ? checked.value : "on-demand";
  }

  function renderTypes() {
    const keep = typeSelect.value;
    typeSelect.replaceChildren();
    for (const group of groupTypes(types, search.value)) {
      typeSelect.append(h("optgroup", { label: group.key },
        group.types.map((t) => h("option", { value: t.instanceType, "data-type": t.instanceType }, describeType(t)))));
    }
    if ([...typeSelect.options].some((o) => o.value === keep)) typeSelect.value = keep;
    typeInfo.textContent = typeSelect.options.length
      ? `${typeSelect.options.length} of ${types.length} types offered in ${zone || "the zone"}`
      : `No type offered in ${zone || "the zone"} matches "${search.value}".`;
    renderPlans();
    renderEfa();
    changed();
  }

  function renderEfa() {
    const type = selectedType();
    const able = Boolean(type && type.efaSupported && (type.maximumNetworkCards || 1) > 1);
    efaOnly.disabled = !able;
    if (!able) efaOnly.checked = false;
    efaHint.textContent = able ? "" : " (needs a type with EFA and several network cards)";
  }

  function renderPlans() {
    const type = typeSelect.value;
    const usable = type ? plans.filter((p) => p.instanceTypes.includes(type) && (!zone || p.availabilityZones.includes(zone))) : [];
    planSelect.replaceChildren(...usable.map((p) => h("option", { value: p.arn },
      `${p.name} · ${p.status} · ${p.availableInstanceCount ?? "?"}/${p.totalInstanceCount ?? "?"} available · ${p.availabilityZones.join(", ")}`)));
    const isPlan = capacityType() === "training-plan";
    planSelect.disabled = !usable.length;
    planSelect.hidden = !isPlan;
    const elsewhere = plans.filter((p) => type && p.instanceTypes.includes(type) && !usable.includes(p));
    planHint.textContent = !type ? "Choose an instance type to see its training plans" : usable.length
      ? `${usable.length} training plan(s) for ${type} in ${zone}`
      : `No training plan for ${type} in ${zone || "this zone"}`
        + (elsewhere.length ? ` (${elsewhere.map((p) => `${p.name} is in ${p.availabilityZones.join(", ")}`).join("; ")})` : "");
  }

  async function loadTypes(forZone) {
    zone = forZone;
    typeInfo.textContent = `Loading the types of ${zone}...`;
    const [catalog, planList] = await Promise.all([
      get(`/catalog/instance-types${query({ availabilityZone: zone })}`),
      plans.length ? Promise.resolve({ trainingPlans: plans }) : get("/catalog/training-plans"),
    ]);
    types = catalog.instanceTypes || [];
    plans = planList.trainingPlans || [];
    renderTypes();
  }

  if (zoneSelect) {
    form.append(h("label", { for: zoneSelect.id }, "Availability Zone"),
      h("div", {}, zoneSelect, h("div", { class: "hint" }, "Default: the cluster's zone (a training plan's group goes to the plan's zone)")));
  }
  form.append(
    h("label", { for: name.id }, "Group name"), h("div", {}, name),
    h("label", { for: search.id }, "Instance type"),
    h("div", { class: "stack" }, search, typeSelect, typeInfo),
    h("label", { for: count.id }, "Instance count"), h("div", {}, count),
    h("label", {}, "Capacity"),
    h("div", { class: "stack" },
      h("div", { class: "choices" }, capacityRadio("on-demand", "On-demand"), capacityRadio("spot", "Spot"), capacityRadio("training-plan", "Training plan")),
      planSelect, planHint),
    h("label", {}, "Create-time options"),
    h("div", { class: "stack" },
      h("div", { class: "choices" },
        h("label", {}, efaOnly, "EFA-only network interfaces", efaHint),
        h("label", {}, dedicated, "Dedicated subnet")),
      h("fieldset", {}, h("legend", {}, "Deep health checks on start (no taints with these)"),
        h("div", { class: "choices" }, checks.map((c) => h("label", {}, c, c.value)))),
      h("div", { class: "hint" }, "Fixed for the life of the group: a change means a new group.")),
    h("label", { for: labels.id }, "Kubernetes labels"), h("div", {}, labels),
    h("label", { for: taints.id }, "Kubernetes taints"), h("div", {}, taints),
  );

  return {
    async setZone(newZone, zones = []) {
      homeZone = newZone;
      if (zoneSelect) {
        zoneSelect.replaceChildren(h("option", { value: "" }, `the cluster's (${newZone})`),
          ...zones.map((z) => h("option", { value: z.name }, `${z.name} (${z.zoneId})`)));
      }
      await loadTypes(newZone);
    },
    onChange(fn) {
      listeners.push(fn);
    },
    body() {
      const group = { name: name.value.trim(), instanceType: typeSelect.value || "", count: Number(count.value) };
      const capacity = capacityType();
      group.capacity = capacity === "training-plan" ? { type: capacity, trainingPlanArn: planSelect.value || "" } : { type: capacity };
      if (zoneSelect && zoneSelect.value) group.availabilityZone = zoneSelect.value;
      if (efaOnly.checked) group.efaOnly = true;
      if (dedicated.checked) group.dedicatedSubnet = true;
      const deep = checks.filter((c) => c.checked).map((c) => c.value);
      if (deep.length) group.deepHealthChecks = deep;
      const labelMap = parsePairs(labels.value);
      if (Object.keys(labelMap).length) group.labels = labelMap;
      const taintList = parseTaints(taints.value);
      if (taintList.length) group.taints = taintList;
      return group;
    },
  };
}
