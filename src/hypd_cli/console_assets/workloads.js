// The cluster page's forms for workloads: submit a training job (a HyperPodPyTorchJob) and
// deploy an inference endpoint (a JumpStart model or a custom one). Each builds the request
// body of its REST route from its fields; the instance types offered are the cluster's
// groups' (the API refuses any other), the teams are task governance's.

import { h, lines, parsePairs } from "./dom.js";

const PROCESSES = ["auto", "gpu", "cpu"];

/** `<select>` of the cluster's instance types (with the groups that have each). */
function typeSelect(id, groups) {
  const byType = new Map();
  for (const g of groups) {
    for (const type of g.instanceType ? [g.instanceType] : g.instanceTypes || []) {
      byType.set(type, [...(byType.get(type) || []), `${g.name} (${g.count})`]);
    }
  }
  return h("select", { id }, [...byType].map(([type, names]) => h("option", { value: type }, `${type} · ${names.join(", ")}`)));
}

/** `<select>` of the teams, "no team" first. */
function teamSelect(id, teams) {
  return h("select", { id }, h("option", { value: "" }, "no team"), teams.map((t) => h("option", { value: t.name }, t.name)));
}

/** A row of the form: label, then the field with an optional hint. */
function row(form, field, label, hint) {
  form.append(h("label", { for: field.id }, label), h("div", {}, field, hint ? h("div", { class: "hint" }, hint) : null));
}

/** Volumes as "claim:/mount/path[:ro]", one a line. */
function parseVolumes(text) {
  return lines(text).map((line) => {
    const [claim, mountPath, mode] = line.split(":").map((part) => part.trim());
    const volume = { claim, mountPath: mountPath || "" };
    if (mode === "ro") volume.readOnly = true;
    return volume;
  });
}

/** Set `key` of `target` to `value` when the value is not empty. */
function put(target, key, value) {
  if (value !== "" && value !== undefined && value !== null && !(Array.isArray(value) && !value.length)
      && !(typeof value === "object" && !Array.isArray(value) && !Object.keys(value).length)) {
    target[key] = value;
  }
}

/** The training job form inside `form` (a form.grid): returns {body()}. */
export function trainingJobFields(form, groups, teams) {
  const name = h("input", { type: "text", id: "job-name", placeholder: "e.g. llama-fsdp" });
  const image = h("input", { type: "text", class: "wide", id: "job-image", placeholder: "repository/image:tag" });
  const command = h("textarea", { id: "job-command", placeholder: "torchrun\none argument a line" });
  const args = h("textarea", { id: "job-args", placeholder: "--epochs\n3" });
  const env = h("textarea", { id: "job-env", placeholder: "NCCL_DEBUG=INFO\none KEY=value a line" });
  const type = typeSelect("job-type", groups);
  const nodes = h("input", { type: "number", id: "job-nodes", min: 1, max: 10000, value: 1 });
  const processes = h("input", { type: "text", id: "job-processes", value: "auto", list: "job-processes-choices" });
  const volumes = h("textarea", { id: "job-volumes", placeholder: "hypd-shared:/shared\nclaim:/mount/path[:ro], one a line" });
  const retries = h("input", { type: "number", id: "job-retries", min: 0, max: 100, placeholder: "operator default" });
  const team = teamSelect("job-team", teams);
  const priority = h("input", { type: "text", id: "job-priority", placeholder: "a priority class (needs a team)" });
  row(form, name, "Job name", "A DNS-1123 label, unique in its namespace");
  row(form, image, "Container image");
  row(form, command, "Command", "Optional: the image's entrypoint otherwise");
  row(form, args, "Arguments");
  row(form, env, "Environment");
  row(form, type, "Instance type", "Of the cluster's instance groups");
  row(form, nodes, "Nodes", "One pod a node");
  form.append(h("datalist", { id: "job-processes-choices" }, PROCESSES.map((p) => h("option", { value: p }))));
  row(form, processes, "Processes per node", "auto, gpu, cpu or a count");
  row(form, volumes, "Volumes", "Persistent volume claims: hypd-shared is the cluster's shared storage");
  row(form, retries, "Restarts of the job");
  row(form, team, "Team", "Task governance: the job is queued in the team's namespace");
  row(form, priority, "Priority class");

  return {
    body() {
      const job = { name: name.value.trim(), image: image.value.trim(), instanceType: type.value, nodeCount: Number(nodes.value) };
      put(job, "command", lines(command.value));
      put(job, "args", lines(args.value));
      put(job, "env", parsePairs(env.value, /\n/));
      const count = processes.value.trim();
      if (count && count !== "auto") job.processesPerNode = /^\d+$/.test(count) ? Number(count) : count;
      put(job, "volumes", parseVolumes(volumes.value));
      if (retries.value !== "") job.maxRetries = Number(retries.value);
      put(job, "team", team.value);
      put(job, "priority", priority.value.trim());
      return job;
    },
  };
}

/** The inference endpoint form inside `form` (a form.grid): returns {body()}. */
export function endpointFields(form, groups, teams) {
  const name = h("input", { type: "text", id: "endpoint-name", placeholder: "e.g. falcon" });
  const type = typeSelect("endpoint-type", groups);
  const replicas = h("input", { type: "number", id: "endpoint-replicas", min: 1, max: 1000, value: 1 });
  const sourceName = "endpoint-source";
  const sourceRadio = (value, label) => h("label", {}, h("input", { type: "radio", name: sourceName, value, id: `endpoint-source-${value}`, checked: value === "jumpstart", onchange: shown }), label);
  const modelId = h("input", { type: "text", id: "endpoint-model-id", placeholder: "huggingface-llm-falcon-7b-bf16" });
  const modelVersion = h("input", { type: "text", id: "endpoint-model-version", placeholder: "version (optional)" });
  const eula = h("input", { type: "checkbox", id: "endpoint-eula" });
  const image = h("input", { type: "text", id: "endpoint-image", placeholder: "the model server's image" });
  const port = h("input", { type: "number", id: "endpoint-port", min: 1, max: 65535, value: 8080 });
  const storeName = "endpoint-store";
  const storeRadio = (value, label) => h("label", {}, h("input", { type: "radio", name: storeName, value, id: `endpoint-store-${value}`, checked: value === "s3" }), label);
  const location = h("input", { type: "text", id: "endpoint-location", placeholder: "bucket/prefix/ or fs-0123456789abcdef0/path" });
  const resources = h("textarea", { id: "endpoint-resources", placeholder: "nvidia.com/gpu=1\ncpu=4, one resource=quantity a line (requests and limits)" });
  const env = h("textarea", { id: "endpoint-env", placeholder: "KEY=value, one a line" });
  const sagemaker = h("input", { type: "text", id: "endpoint-sagemaker", placeholder: "register with SageMaker under this name (optional)" });
  const team = teamSelect("endpoint-team", teams);
  const jumpStart = h("div", { class: "stack", id: "endpoint-jumpstart-fields" },
    h("div", { class: "choices" }, modelId, modelVersion),
    h("label", { class: "inline" }, eula, "Accept the model's end-user licence (gated models need it)"));
  const custom = h("div", { class: "stack", id: "endpoint-custom-fields" },
    h("div", { class: "choices" }, image, h("span", { class: "inline" }, "port", port)),
    h("div", { class: "choices" }, h("span", { class: "muted" }, "Weights in"), storeRadio("s3", "S3"), storeRadio("fsx", "FSx for Lustre"), location),
    resources, env);

  row(form, name, "Endpoint name");
  row(form, type, "Instance type", "Of the cluster's instance groups");
  row(form, replicas, "Replicas");
  form.append(h("label", {}, "Model"),
    h("div", { class: "stack" }, h("div", { class: "choices" }, sourceRadio("jumpstart", "JumpStart model"), sourceRadio("custom", "Custom model server")), jumpStart, custom));
  row(form, sagemaker, "SageMaker endpoint", "Then it can be invoked through SageMaker's runtime and from hypd");
  row(form, team, "Team");

  function source() {
    return form.querySelector(`input[name="${sourceName}"]:checked`).value;
  }

  function shown() {
    jumpStart.hidden = source() !== "jumpstart";
    custom.hidden = source() !== "custom";
  }

  function modelSource() {
    const store = form.querySelector(`input[name="${storeName}"]:checked`).value;
    const [head, ...rest] = location.value.trim().split("/");
    const tail = rest.join("/");
    if (store === "fsx") {
      const fsx = { fileSystemId: head };
      put(fsx, "path", tail);
      return { fsx };
    }
    const s3 = { bucket: head };
    put(s3, "prefix", tail);
    return { s3 };
  }

  shown();
  return {
    body() {
      const endpoint = { name: name.value.trim(), instanceType: type.value, replicas: Number(replicas.value) };
      if (source() === "jumpstart") {
        endpoint.jumpStart = { modelId: modelId.value.trim() };
        put(endpoint.jumpStart, "modelVersion", modelVersion.value.trim());
        if (eula.checked) endpoint.jumpStart.acceptEula = true;
      } else {
        endpoint.model = { source: modelSource(), image: image.value.trim(), port: Number(port.value) };
        const quantities = parsePairs(resources.value, /\n/);
        if (Object.keys(quantities).length) endpoint.model.resources = { requests: quantities, limits: quantities };
        put(endpoint.model, "env", parsePairs(env.value, /\n/));
      }
      put(endpoint, "sageMakerEndpointName", sagemaker.value.trim());
      put(endpoint, "team", team.value);
      return endpoint;
    },
  };
}
