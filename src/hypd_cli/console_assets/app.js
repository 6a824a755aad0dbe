// The hypd console: a hash-routed single page over the REST API (docs/console.md).
//   #/clusters                  the clusters
//   #/create                    the create form
//   #/operations/{id}           an operation's staged progress
//   #/clusters/{tag}[/section]  a cluster: groups, nodes, autoscaling, features, workloads,
//                               operations, teardown

import { get, path, query } from "./api.js";
import { actionButton, badge, errorBox, fill, h, table, when } from "./dom.js";
import { clusterPage } from "./cluster.js";
import { createPage } from "./create.js";
import { operationPage } from "./operation.js";

const main = () => document.getElementById("main");
let leaving = [];

function onLeave(stop) {
  leaving.push(stop);
}

function nodesSummary(cluster) {
  const groups = (cluster.hyperpod && cluster.hyperpod.instanceGroups) || [];
  if (!groups.length) return "-";
  const current = groups.reduce((n, g) => n + (g.currentCount || 0), 0);
  const target = groups.reduce((n, g) => n + (g.targetCount ?? g.currentCount ?? 0), 0);
  return `${groups.length} group${groups.length === 1 ? "" : "s"} · ${current}/${target} nodes`;
}

async function clustersPage(el) {
  const list = h("div", { id: "clusters-list" }, h("p", { class: "muted" }, "Loading the clusters..."));
  fill(el,
    h("div", { class: "toolbar" }, h("h1", {}, "Clusters"), h("span", { class: "spacer" }),
      actionButton("Refresh", () => load()), h("a", { href: "#/create" }, h("button", { type: "button", class: "primary" }, "Create cluster"))),
    h("div", { class: "panel" }, list));

  async function load() {
    try {
      const clusters = [];
      let nextToken;
      do {
        const page = await get(`/clusters${query({ nextToken })}`);
        clusters.push(...(page.clusters || []));
        nextToken = page.nextToken;
      } while (nextToken);
      const zones = new Map();
      fill(list, table([
        ["Cluster", (c) => h("a", { href: `#/clusters/${encodeURIComponent(c.tag)}`, class: "cluster-link" }, h("strong", {}, c.tag))],
        ["Status", (c) => badge(c.status)],
        ["Zone", (c) => { const cell = h("span", { class: "nowrap" }, "-"); zones.set(c.tag, cell); return cell; }],
        ["EKS", (c) => (c.eks ? h("span", { class: "nowrap" }, `${c.eks.version || ""} `, badge(c.eks.status)) : "-")],
        ["HyperPod", (c) => (c.hyperpod ? badge(c.hyperpod.status) : "-")],
        ["Capacity", (c) => h("span", { class: "nowrap" }, nodesSummary(c))],
        ["Source", (c) => c.source],
        ["Last operation", (c) => (c.lastOperationId ? h("a", { href: `#/operations/${c.lastOperationId}`, class: "mono" }, c.lastOperationId) : "-")],
        ["Updated", (c) => when(c.updatedAt)],
      ], clusters, "No clusters yet: create one.", (c) => ({ "data-cluster": c.tag, "data-cluster-status": c.status || "" })));
      // The zone is a group's: asked per cluster that has a HyperPod cluster, after the list shows.
      for (const c of clusters) {
        if (!c.hyperpod || c.status === "DELETED") continue;
        get(path`/clusters/${c.tag}/instance-groups`).then((g) => {
          const found = [...new Set((g.instanceGroups || []).map((x) => x.availabilityZone).filter(Boolean))];
          fill(zones.get(c.tag), found.join(", ") || "-");
        }, () => {});
      }
    } catch (err) {
      fill(list, errorBox(err));
    }
  }

  await load();
}

async function route() {
  leaving.forEach((stop) => stop());
  leaving = [];
  const hash = location.hash.replace(/^#\/?/, "");
  const parts = hash.split("/").map((p) => decodeURIComponent(p));
  const el = main();
  document.querySelectorAll("[data-nav]").forEach((a) => a.classList.toggle("active", a.dataset.nav === (parts[0] || "clusters") && parts.length === 1));
  try {
    if (parts[0] === "create") await createPage(el);
    else if (parts[0] === "operations" && parts[1]) operationPage(el, parts[1], onLeave);
    else if (parts[0] === "clusters" && parts[1]) await clusterPage(el, parts[1], parts[2], onLeave);
    else await clustersPage(el);
  } catch (err) {
    fill(el, errorBox(err));
  }
  document.body.dataset.route = parts.join("/") || "clusters";
}

window.addEventListener("hashchange", route);
route();
