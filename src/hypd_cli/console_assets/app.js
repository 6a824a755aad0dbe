// The hypd console: a hash-routed single page over the REST API (docs/console.md).
//   #/clusters                  the clusters, and the import of those hypd did not create
//   #/create                    the create form
//   #/operations/{id}           an operation's staged progress
//   #/clusters/{tag}[/section]  a cluster: groups, nodes, autoscaling, features, teams,
//                               workloads, operations, teardown

import { change } from "./actions.js";
import { get, path, query } from "./api.js";
import { actionButton, badge, errorBox, fill, h, table, when } from "./dom.js";
import { clusterPage } from "./cluster.js";
import { createPage } from "./create.js";
import { operationPage, operationPanel } from "./operation.js";

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
  const discovery = h("div", { id: "discover-progress" });
  const names = h("input", { type: "text", id: "discover-names", placeholder: "cluster names, comma-separated (empty: every cluster)" });
  const ctx = { follow: (container, id, onEnd) => onLeave(operationPanel(container, id, { onEnd, compact: true })) };
  fill(el,
    h("div", { class: "toolbar" }, h("h1", {}, "Clusters"), h("span", { class: "spacer" }),
      actionButton("Refresh", () => load()), h("a", { href: "#/create" }, h("button", { type: "button", class: "primary" }, "Create cluster"))),
    h("div", { class: "panel" }, list),
    h("details", { class: "panel", id: "discover-details" },
      h("summary", {}, h("strong", {}, "Import clusters already in this account")),
      h("p", { class: "muted small" }, "The EKS and HyperPod clusters of this account and Region that hypd did not create: hypd records them, reads them and manages their groups, nodes, features and workloads; it never deletes what it did not create."),
      h("div", { class: "inline" }, names, actionButton("Discover", () => {
        const chosen = names.value.split(",").map((n) => n.trim()).filter(Boolean);
        return change(ctx, discovery, "POST", "/clusters/discover", chosen.length ? { clusterNames: chosen } : {}, () => load());
      }, { id: "discover-submit" })),
      discovery));

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
