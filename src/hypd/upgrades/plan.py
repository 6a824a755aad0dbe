"""The upgrade plan, pure: (facts, request) -> every step in the documented order, what blocks
it and what to look out for (docs/upgrades.md).

Order (the EKS user guide, "Update existing cluster to new Kubernetes version"; the HyperPod
guide on updating cluster software): the control plane one minor version per step, then the
add-ons to versions compatible with the new version, then the HyperPod dependencies chart
rendered for it, then the nodes' software in rolling batches.

The estimates are what each step takes on AWS as far as AWS says or is commonly observed, and
what the local cloud's emulators take (the bench `bench/upgrades.py` compares the plan with a
run): a control-plane step 10 minutes, add-on updates (started together) a minute, the chart
under a minute, a batch of nodes `NODE_BATCH_SECONDS` plus the wait between batches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from hypd.upgrades.inputs import BatchSize, BatchType, UpgradeRequest
from hypd.upgrades.model import (
    Addon,
    Blocker,
    Disruption,
    NodeGroup,
    Plan,
    Step,
    UpgradeFacts,
)

CONTROL_PLANE_STEP_SECONDS = 600
"""One UpdateClusterVersion (EKS: "within a few minutes"; commonly 8-12)."""
ADDON_UPDATE_SECONDS = 60
"""The add-on updates of a step, started together (EKS: most settle within a minute)."""
CHART_SECONDS = 0
"""Rendering and applying the chart: one task, seconds."""
NODE_BATCH_SECONDS = 20 * 60
"""One batch of HyperPod nodes: drained, replaced with the new AMI, joined and health-checked
(the local cloud's HyperPod takes as long)."""
DEFAULT_BATCH = BatchSize(type=BatchType.COUNT, value=1)
"""HyperPod's default when no DeploymentConfig is sent is to update every node at once; hypd
sends one node at a time unless the request says otherwise: a rollout that keeps workloads
running is what a request that names nothing should get."""

BUSY_UPDATES = ("Pending", "InProgress", "RollbackInProgress")


def minor(version: str) -> int:
    """``1.34`` -> 34 (EKS versions are 1.x)."""
    return int(version.partition(".")[2])


def control_plane_path(current: str, target: str) -> list[str]:
    """The versions to step through, one minor at a time: 1.32 -> 1.34 is [1.33, 1.34]."""
    return [f"1.{m}" for m in range(minor(current) + 1, minor(target) + 1)]


def batch_sizes(nodes: int, batch: BatchSize) -> list[int]:
    """The batches a rolling update of ``nodes`` makes: a count as given (at most every node),
    a percentage of the group rounded down but at least one node."""
    if nodes <= 0:
        return []
    if batch.type is BatchType.COUNT:
        size = batch.value
    else:
        size = max(1, math.floor(nodes * batch.value / 100))
    size = min(size, nodes)
    full, rest = divmod(nodes, size)
    return [size] * full + ([rest] if rest else [])


def newest_compatible(addon: Addon, kubernetes_version: str) -> str | None:
    versions = addon.compatible.get(kubernetes_version) or ()
    return versions[0] if versions else None


def _control_plane(facts: UpgradeFacts, request: UpgradeRequest, blockers: list[Blocker],
                   warnings: list[str]) -> tuple[str, list[Step]]:
    """The control plane's steps and the Kubernetes version the cluster ends on."""
    target = request.kubernetes_version
    current = facts.kubernetes_version
    if target is None or target == current:
        return current, []
    if minor(target) < minor(current):
        blockers.append(Blocker(
            "DowngradeNotSupported",
            f"kubernetesVersion {target} is older than the cluster's {current}; EKS cannot "
            "downgrade a cluster.",
            f"name a version later than {current}, or omit kubernetesVersion",
            field="kubernetesVersion"))
        return current, []
    path = control_plane_path(current, target)
    offered = {v.version: v for v in facts.versions if v.status != "UNSUPPORTED"}
    missing = [v for v in path if v not in offered]
    if missing:
        later = sorted((v for v in offered if minor(v) > minor(current)), key=minor)
        blockers.append(Blocker(
            "KubernetesVersionNotOffered",
            f"EKS does not offer Kubernetes {', '.join(missing)} in this Region.",
            f"choose one of {', '.join(later)}" if later else
            f"{current} is the newest version EKS offers here",
            field="kubernetesVersion"))
        return current, []
    first = path[0]
    for insight in facts.insights:
        if insight.kubernetes_version != first or insight.status != "ERROR":
            continue
        found = f": {'; '.join(insight.findings)}" if insight.findings else ""
        if request.force:
            warnings.append(f"EKS upgrade insight '{insight.name}' reports ERROR{found}; "
                            "force skips EKS's check.")
            continue
        blockers.append(Blocker(
            "UpgradeInsightError",
            f"EKS upgrade insight '{insight.name}' reports ERROR for {first}: "
            f"{insight.reason}{found}",
            (insight.recommendation or "resolve what it names")
            + "; or send force: true to upgrade anyway"))
    for insight in facts.insights:
        if insight.kubernetes_version == first and insight.status == "WARNING":
            warnings.append(f"EKS upgrade insight '{insight.name}' reports WARNING: "
                            f"{insight.reason}")
    final = offered[target]
    if final.status == "EXTENDED_SUPPORT":
        warnings.append(f"Kubernetes {target} is in extended support (extra cost per cluster "
                        f"hour) until {final.to_json()['endOfExtendedSupport']}.")
    steps, previous = [], current
    for version in path:
        steps.append(Step("control-plane", f"kubernetes-{version}",
                          f"EKS control plane {previous} -> {version}",
                          {"kubernetesVersion": version}, CONTROL_PLANE_STEP_SECONDS))
        previous = version
    return target, steps


def _addons(facts: UpgradeFacts, request: UpgradeRequest, kubernetes: str,
            blockers: list[Blocker], warnings: list[str]) -> list[Step]:
    installed = {addon.name: addon for addon in facts.addons}
    wanted: dict[str, str] = {}
    if request.addons == "compatible":
        for addon in facts.addons:
            newest = newest_compatible(addon, kubernetes)
            if newest is None:
                blockers.append(Blocker(
                    "AddonHasNoCompatibleVersion",
                    f"add-on {addon.name} has no version compatible with Kubernetes "
                    f"{kubernetes}.",
                    f"remove the add-on {addon.name}, or choose another Kubernetes version",
                    field="addons"))
            elif newest != addon.version:
                wanted[addon.name] = newest
    elif isinstance(request.addons, dict):
        for name, version in request.addons.items():
            named = installed.get(name)
            if named is None:
                blockers.append(Blocker(
                    "AddonNotInstalled", f"add-on {name} is not installed on this cluster.",
                    f"name one of {', '.join(sorted(installed)) or 'none'}",
                    field=f"addons.{name}"))
                continue
            compatible = named.compatible.get(kubernetes) or ()
            if version not in compatible:
                blockers.append(Blocker(
                    "AddonVersionIncompatible",
                    f"add-on {name} {version} is not compatible with Kubernetes {kubernetes}.",
                    f"choose one of {', '.join(compatible[:5])}" if compatible else
                    f"{name} has no version compatible with {kubernetes}",
                    field=f"addons.{name}"))
            elif version != named.version:
                wanted[name] = version
    else:
        stale = [a.name for a in facts.addons
                 if a.compatible.get(kubernetes) and a.version not in a.compatible[kubernetes]]
        if stale and kubernetes != facts.kubernetes_version:
            warnings.append(f"add-ons {', '.join(stale)} are on versions not compatible with "
                            f"Kubernetes {kubernetes}: send addons: \"compatible\".")
    return [Step("addons", f"addon-{name}", f"add-on {name} {installed[name].version} -> "
                 f"{version}", {"addon": name, "version": version},
                 ADDON_UPDATE_SECONDS if index == 0 else 0)
            for index, (name, version) in enumerate(sorted(wanted.items()))]


def _chart(facts: UpgradeFacts, request: UpgradeRequest, kubernetes: str,
           warnings: list[str]) -> list[Step]:
    chart = facts.chart
    if chart is None:
        return []
    current = chart.installed == chart.bundled and chart.rendered_for == kubernetes
    if request.chart != "bundled":
        if chart.rendered_for and chart.rendered_for != kubernetes:
            warnings.append(f"the HyperPod dependencies chart was rendered for Kubernetes "
                            f"{chart.rendered_for}: send chart: \"bundled\".")
        return []
    if current:
        return []
    return [Step("chart", "chart", f"HyperPod dependencies chart {chart.installed or 'unknown'}"
                 f" (Kubernetes {chart.rendered_for or 'unknown'}) -> {chart.bundled} "
                 f"(Kubernetes {kubernetes})",
                 {"chart": chart.bundled, "kubernetesVersion": kubernetes}, CHART_SECONDS)]


def _blocking_disruptions(disruptions: Iterable[Disruption]) -> list[Blocker]:
    """Every budget that allows no disruption blocks the drain of its pods' nodes."""
    return [Blocker(
        "DisruptionBudgetBlocks",
        f"PodDisruptionBudget {d.namespace}/{d.name} allows no disruption"
        + (f" (pods on {', '.join(d.nodes)})" if d.nodes else "")
        + "; HyperPod cannot drain its nodes.",
        f"scale the workload up or relax the budget (kubectl -n {d.namespace} edit pdb "
        f"{d.name}), then plan again")
        for d in disruptions]


def _nodes(facts: UpgradeFacts, request: UpgradeRequest, blockers: list[Blocker],
           warnings: list[str]) -> list[Step]:
    target = request.nodes
    if target is None:
        return []
    if facts.hyperpod_name is None:
        blockers.append(Blocker("NoHyperPodCluster", f"cluster {facts.tag} has no HyperPod "
                                "cluster whose nodes could be updated.", "omit nodes",
                                field="nodes"))
        return []
    groups = {g.name: g for g in facts.groups}
    chosen: list[NodeGroup] = []
    for index, name in enumerate(target.instance_groups or list(groups)):
        group = groups.get(name)
        if group is None:
            blockers.append(Blocker(
                "InstanceGroupNotFound", f"instance group {name} is not in cluster "
                f"{facts.tag}.", f"name one of {', '.join(groups) or 'none'}",
                field=f"nodes.instanceGroups[{index}]"))
            continue
        if group.update_status in BUSY_UPDATES:
            blockers.append(Blocker(
                "NodesUpdating", f"instance group {name} has a software update "
                f"{group.update_status}.", "wait for it to end, then plan again"))
            continue
        if group.image_status == "UpToDate" or group.nodes == 0:
            warnings.append(f"instance group {name} is up to date"
                            + (f" ({group.image_release})" if group.image_release else "")
                            + ("" if group.nodes else " (no nodes)") + ".")
            continue
        chosen.append(group)
    if facts.hyperpod_status not in (None, "InService") and chosen:
        blockers.append(Blocker("HyperPodNotInService", f"HyperPod cluster "
                                f"{facts.hyperpod_name} is {facts.hyperpod_status}.",
                                "wait until it is InService"))
    if chosen:
        blockers.extend(_blocking_disruptions(facts.disruptions))
    batch = target.batch or DEFAULT_BATCH
    wait = target.wait_seconds or 0
    steps: list[Step] = []
    for group in chosen:
        sizes = batch_sizes(group.nodes, batch)
        for index, size in enumerate(sizes, start=1):
            steps.append(Step(
                "nodes", f"{group.name}-batch-{index}",
                f"instance group {group.name}: batch {index} of {len(sizes)} ({size} "
                f"node{'s' if size != 1 else ''}) from {group.image_release or 'its release'}"
                " to the newest HyperPod release",
                {"instanceGroup": group.name, "batch": index, "nodes": size},
                NODE_BATCH_SECONDS + (wait if index < len(sizes) else 0)))
    return steps


def plan(facts: UpgradeFacts, request: UpgradeRequest) -> Plan:
    """Every step of the upgrade, what blocks it, and warnings (nothing is changed)."""
    blockers: list[Blocker] = []
    warnings: list[str] = []
    if facts.running_operation is not None:
        operation_id, kind = facts.running_operation
        blockers.append(Blocker(
            "OperationRunning", f"operation {operation_id} ({kind}) is running on cluster "
            f"{facts.tag}.", f"wait for it to end (hypd ops watch {operation_id})"))
    if not facts.created_by_hypd:
        blockers.append(Blocker(
            "NotCreatedByHypd", f"cluster {facts.tag} was discovered, not created by hypd: "
            f"hypd's roles may upgrade only the clusters it made (hypd-*), not {facts.eks_name}.",
            "upgrade it with the tools that made it (the EKS console, eksctl), then read it "
            "here again"))
    if facts.eks_status != "ACTIVE":
        blockers.append(Blocker(
            "ClusterNotActive", f"EKS cluster {facts.eks_name} is {facts.eks_status}.",
            "wait until it is ACTIVE"))
    kubernetes, steps = _control_plane(facts, request, blockers, warnings)
    steps += _addons(facts, request, kubernetes, blockers, warnings)
    steps += _chart(facts, request, kubernetes, warnings)
    steps += _nodes(facts, request, blockers, warnings)
    return Plan(tuple(steps), tuple(blockers), tuple(warnings))

