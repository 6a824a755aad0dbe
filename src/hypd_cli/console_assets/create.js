// The create form (#/create): every choice comes from the catalogue, the request is shown
// before it is sent, and a 202 opens the operation's progress panel.

import { call, get } from "./api.js";
import { errorBox, fill, h } from "./dom.js";
import { groupFields } from "./groups.js";

const KUBERNETES_VERSIONS = ["1.33", "1.32", "1.31", "1.30", "1.29", "1.28"];
const FSX_DEPLOYMENT_TYPES = ["SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"];
// The features of FeaturesRequest, with the settings a create may give each.
const FEATURES = [
  ["trainingOperator", "Training operator", "HyperPodPyTorchJob training jobs"],
  ["inferenceOperator", "Inference operator", "InferenceEndpointConfig deployments"],
  ["tieredCheckpointing", "Tiered checkpointing", "checkpoints in node memory"],
  ["observability", "Observability", "metrics to Amazon Managed Prometheus, logs"],
  ["taskGovernance", "Task governance", "teams, quotas, fair share"],
];

export async function createPage(main) {
  const form = h("form", { class: "grid", id: "create-form", novalidate: true });
  const preview = h("pre", { class: "json", id: "create-preview" });
  const errors = h("div", { id: "create-error" });
  const submit = h("button", { type: "submit", class: "primary", id: "create-submit" }, "Create cluster");
  fill(main,
    h("h1", {}, "Create a HyperPod cluster"),
    h("div", { class: "panel" }, form),
    h("div", { class: "panel" }, h("h2", {}, "The request"),
      h("p", { class: "muted small" }, "POST /clusters, exactly as it will be sent:"), preview,
      errors, h("div", { class: "toolbar mt" }, submit)));

  const tag = h("input", { type: "text", id: "create-tag", placeholder: "e.g. research", maxlength: 58 });
  const zoneSelect = h("select", { id: "create-zone" });
  const version = h("select", { id: "create-k8s" }, h("option", { value: "" }, "default (1.33)"),
    KUBERNETES_VERSIONS.map((v) => h("option", { value: v }, v)));
  form.append(
    h("label", { for: "create-tag" }, "Cluster tag"),
    h("div", {}, tag, h("div", { class: "hint" }, "Letters, digits and hyphens; names the EKS and HyperPod clusters hypd-TAG")),
    h("label", { for: "create-zone" }, "Availability Zone"),
    h("div", {}, zoneSelect, h("div", { class: "hint" }, "Where the compute nodes run")),
    h("label", { for: "create-k8s" }, "Kubernetes version"), h("div", {}, version));
  // The first group's fields are the form's own; "Add another group" appends more, each in
  // its own block with its own ids (create-g2-..., create-g3-...) and a Remove button.
  const groups = [groupFields(form, "create", { defaults: { name: "workers", count: 1 } })];
  const moreGroups = h("div", { class: "span", id: "create-more-groups" });
  let added = 1;
  const addGroup = h("button", { type: "button", id: "create-add-group" }, "Add another instance group");
  form.append(moreGroups, h("div", { class: "span" }, addGroup));
  addGroup.addEventListener("click", async () => {
    added += 1;
    const prefix = `create-g${added}`;
    const block = h("div", { class: "grid", "data-extra-group": prefix });
    const fields = groupFields(block, prefix, { defaults: { name: `group-${added}`, count: 1 } });
    const remove = h("button", { type: "button", id: `${prefix}-remove` }, "Remove this group");
    moreGroups.append(h("fieldset", { class: "mt", id: `${prefix}-block` },
      h("legend", {}, "Another instance group"), block, remove));
    groups.push(fields);
    fields.onChange(update);
    remove.addEventListener("click", () => {
      groups.splice(groups.indexOf(fields), 1);
      document.getElementById(`${prefix}-block`).remove();
      update();
    });
    try {
      await fields.setZone(zoneSelect.value);
    } catch (err) {
      fill(errors, errorBox(err));
    }
    update();
  });

  const storageName = "create-storage";
  const storageRadio = (value, label) => h("label", {}, h("input", { type: "radio", name: storageName, value, id: `create-storage-${value}`, checked: value === "s3", onchange: update }), label);
  const bucket = h("input", { type: "text", id: "create-s3-bucket", placeholder: "an existing bucket" });
  const prefix = h("input", { type: "text", id: "create-s3-prefix", placeholder: "optional: data/ (ends with /)" });
  const fsxSize = h("input", { type: "number", id: "create-fsx-capacity", min: 1200, step: 1200, value: 1200 });
  const fsxType = h("select", { id: "create-fsx-type" }, h("option", { value: "" }, "default"), FSX_DEPLOYMENT_TYPES.map((t) => h("option", { value: t }, t)));
  form.append(h("label", {}, "Shared storage"),
    h("div", { class: "stack" },
      h("div", { class: "choices" }, storageRadio("s3", "S3 bucket (Mountpoint)"), storageRadio("fsx", "FSx for Lustre")),
      h("div", { class: "choices", id: "create-s3-fields" }, bucket, prefix),
      h("div", { class: "choices", id: "create-fsx-fields" }, h("span", { class: "inline" }, fsxSize, "GiB"), fsxType)));

  const featureBoxes = FEATURES.map(([key, label, what]) => [key, h("input", { type: "checkbox", id: `create-feature-${key}`, value: key, onchange: update }), label, what]);
  const tlsBucket = h("input", { type: "text", id: "create-tls-bucket", placeholder: "hyperpod-tls-... (optional)" });
  const memoryPercent = h("input", { type: "number", id: "create-memory-percent", min: 0, max: 100, placeholder: "memory %" });
  form.append(h("label", {}, "Managed features"),
    h("div", { class: "stack" },
      featureBoxes.map(([key, box, label, what]) => h("div", {}, h("label", { class: "inline" }, box, h("strong", {}, label), h("span", { class: "muted small" }, what)),
        key === "inferenceOperator" ? h("span", {}, " ", tlsBucket) : null,
        key === "tieredCheckpointing" ? h("span", {}, " ", memoryPercent) : null)),
      h("div", { class: "hint" }, "Turned on as the create's last stage; each can be changed later on the cluster page.")));

  function storage() {
    const kind = form.querySelector(`input[name="${storageName}"]:checked`).value;
    form.querySelector("#create-s3-fields").hidden = kind !== "s3";
    form.querySelector("#create-fsx-fields").hidden = kind !== "fsx";
    if (kind === "s3") {
      const s3 = { bucket: bucket.value.trim() };
      if (prefix.value.trim()) s3.prefix = prefix.value.trim();
      return { s3 };
    }
    const fsx = { storageCapacityGiB: Number(fsxSize.value) };
    if (fsxType.value) fsx.deploymentType = fsxType.value;
    return { fsx };
  }

  function features() {
    const chosen = {};
    for (const [key, box] of featureBoxes) {
      if (!box.checked) continue;
      chosen[key] = { enabled: true };
      if (key === "inferenceOperator" && tlsBucket.value.trim()) chosen[key].tlsCertificateBucket = tlsBucket.value.trim();
      if (key === "tieredCheckpointing" && memoryPercent.value !== "") chosen[key].memoryPercent = Number(memoryPercent.value);
    }
    return Object.keys(chosen).length ? chosen : null;
  }

  function body() {
    const request = { tag: tag.value.trim(), availabilityZone: zoneSelect.value, instanceGroups: groups.map((g) => g.body()), storage: storage() };
    if (version.value) request.kubernetesVersion = version.value;
    const chosen = features();
    if (chosen) request.features = chosen;
    return request;
  }

  function update() {
    preview.textContent = JSON.stringify(body(), null, 2);
  }

  form.addEventListener("input", update);
  form.addEventListener("change", update);
  groups[0].onChange(update);
  submit.addEventListener("click", async (event) => {
    event.preventDefault();
    errors.replaceChildren();
    submit.disabled = true;
    try {
      const { body: accepted } = await call("POST", "/clusters", body());
      location.hash = `#/operations/${accepted.operationId}`;
    } catch (err) {
      fill(errors, errorBox(err));
    } finally {
      submit.disabled = false;
    }
  });
  form.addEventListener("submit", (event) => event.preventDefault());

  try {
    const zones = (await get("/catalog/availability-zones")).availabilityZones || [];
    zoneSelect.replaceChildren(...zones.map((z) => h("option", { value: z.name }, `${z.name} (${z.zoneId}, ${z.state})`)));
    zoneSelect.addEventListener("change", () => Promise.all(groups.map((g) => g.setZone(zoneSelect.value)))
      .then(update, (err) => fill(errors, errorBox(err))));
    if (zones.length) await groups[0].setZone(zoneSelect.value);
  } catch (err) {
    fill(errors, errorBox(err));
  }
  update();
}
