"""The SageMaker HyperPod emulator (see docs/emulator.md, "Contracts").

``HyperPodEmulator`` is a plain class with one method per SageMaker operation, named in snake
case, taking the validated input dict (model member names) and returning the output dict
(model member names, aware datetimes). Statuses are computed lazily from the virtual clock
(``hyperpod_state.Timeline``); ``tick()`` emits the EventBridge events of every status change
that has come due, exactly once and in time order. It never sleeps nor reads the wall clock.

It is put together from one module per part of the service, on the base the EKS emulator
shares (`service`): `hyperpod_core` (state, node life cycles, descriptions), `hyperpod_events`,
`hyperpod_checks`, `hyperpod_clusters`, `hyperpod_nodes`, `hyperpod_plans` (tags, training
plans) and `hyperpod_governance` (task governance: scheduler configs, compute quotas); this
module adds the fault hooks and knobs.
"""

from __future__ import annotations

from datetime import timedelta

from hypd_local.emulator.errors import ResourceNotFound
from hypd_local.emulator.hyperpod_catalog import Catalog, TrainingPlanSeed
from hypd_local.emulator.hyperpod_clusters import HyperPodClusters
from hypd_local.emulator.hyperpod_core import Emit
from hypd_local.emulator.hyperpod_events import CLUSTER_EVENT, NODE_HEALTH, SOURCE, STATE_CHANGE
from hypd_local.emulator.hyperpod_governance import HyperPodGovernance
from hypd_local.emulator.hyperpod_network import HyperPodNetwork
from hypd_local.emulator.hyperpod_nodes import HyperPodNodes
from hypd_local.emulator.hyperpod_plans import HyperPodPlans
from hypd_local.emulator.hyperpod_state import Health, HyperPodDurations
from hypd_local.emulator.service import Clock, operation

__all__ = [
    "AUTOSCALING_FAILS", "CLUSTER_EVENT", "NODE_HEALTH", "SOURCE", "STATE_CHANGE", "Catalog",
    "Clock", "Emit", "HyperPodDurations", "HyperPodEmulator",
]

AUTOSCALING_FAILS = (
    "AutoScaling could not be enabled: the managed Karpenter controller failed to start."
)


def lifecycle_log_group(cluster_name: str, cluster_arn: str) -> str:
    """HyperPod's log group of a cluster: ``/aws/sagemaker/Clusters/<name>/<id>``, the id
    being the last part of the cluster's ARN (SageMaker HyperPod developer guide, lifecycle
    scripts' logs in CloudWatch)."""
    return f"/aws/sagemaker/Clusters/{cluster_name}/{cluster_arn.rsplit('/', 1)[-1]}"


class HyperPodEmulator(HyperPodClusters, HyperPodNodes, HyperPodPlans, HyperPodGovernance,
                       HyperPodNetwork):
    """SageMaker HyperPod clusters, nodes, training plans and task governance (scheduler
    configs, compute quotas) on a virtual clock."""

    # --- fault hooks and knobs ----------------------------------------------------------------

    def fail_next_create(
        self,
        cluster_name: str | None = None,
        message: str = "Cluster creation failed: lifecycle script exited with a non-zero code.",
    ) -> None:
        """The next CreateCluster (of ``cluster_name``, or any) ends Failed with ``message``."""
        with self._lock:
            self._fail_next.add(cluster_name, message)

    def fail_next_autoscaling(
        self, cluster_name: str | None = None, message: str = AUTOSCALING_FAILS
    ) -> None:
        """The next enabling of AutoScaling (CreateCluster or UpdateCluster, of ``cluster_name``
        or any cluster) ends with AutoScaling ``Failed`` and ``message`` as its FailureMessage;
        the cluster itself becomes InService as usual."""
        with self._lock:
            self._fail_autoscaling.add(cluster_name, message)

    def insufficient_capacity(self, instance_type: str, zone: str, enabled: bool = True) -> None:
        """AWS has no capacity for ``instance_type`` in ``zone`` until called with False.

        When capacity returns, the groups of continuous-provisioning clusters that are below
        their target there launch the missing nodes at once (see ``_provision_continuous``)."""
        with self._lock:
            self._tick_locked()  # what came due before the change, at the old capacity
            if enabled:
                self._ice.add((instance_type, zone))
            else:
                self._ice.discard((instance_type, zone))
            self._changed()
            self._tick_locked()

    def set_durations(
        self, durations: HyperPodDurations | None = None, **changes: timedelta
    ) -> None:
        """Replace the durations (already planned steps keep their times)."""
        with self._lock:
            base = durations or self.durations
            self.durations = base.with_changes(**changes) if changes else base

    @operation
    def make_node_unhealthy(
        self,
        cluster_name: str,
        node_id: str,
        reason: str = "GPU health check failed",
        action: str = "Replace",
        repair: bool | None = None,
    ) -> None:
        """Node ``node_id`` turns unhealthy now. HyperPod repairs it itself when ``repair``
        (default: when NodeRecovery is Automatic); otherwise its health event's RepairAction is
        None and its Recommendation names the repair, and the node stays in Failure until a
        client reboots or replaces it."""
        if action not in ("Reboot", "Replace"):
            raise ValueError("action must be Reboot or Replace")
        now = self._now()
        c = self._cluster(cluster_name, now)
        node = self._node(c, node_id, now)
        if node is None:
            raise ResourceNotFound(f"Node '{node_id}' not found in cluster '{c.name}'.")
        if repair is None:
            repair = c.spec.get("NodeRecovery", "Automatic") == "Automatic"
        seq = self._next_seq
        node.health.schedule(now, seq, (now, Health("Unhealthy", reason, action, repair)))
        node.status.schedule(now, seq, (now, "Failure"))
        node.message.schedule(now, seq, (now, reason))
        if repair:
            start = now + self.durations.auto_repair_start
            if action == "Reboot":
                self._reboot(c, node, start)
            else:
                self._replace(c, node, start)

    def lifecycle_log_groups(self) -> list[str]:
        """The CloudWatch log groups HyperPod has written its nodes' lifecycle-script logs to
        by now, ``/aws/sagemaker/Clusters/<name>/<id>``: one per cluster a node of which has
        launched. HyperPod never deletes them: they outlive the cluster."""
        with self._lock:
            now = self._now()
            return [lifecycle_log_group(c.name, c.arn) for c in self._clusters.values()
                    if any(n.launch_time <= now for n in c.nodes.values())]

    def orchestrated_by(self, eks_arn: str) -> list[str]:
        """The names of the clusters not gone (Deleting ones too) whose
        ``Orchestrator.Eks.ClusterArn`` is ``eks_arn``: EKS refuses to delete it meanwhile."""
        with self._lock:
            now = self._now()
            return [c.name for c in self._clusters.values()
                    if c.status.at(now) is not None
                    and ((c.spec.get("Orchestrator") or {}).get("Eks") or {}).get(
                        "ClusterArn") == eks_arn]

    def add_training_plan(self, seed: TrainingPlanSeed) -> str:
        """Seed one more training plan; returns its ARN."""
        with self._lock:
            self._add_plan(seed, self._now())
            return self._plans[seed.name].arn
