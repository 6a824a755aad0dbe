"""The teardown plan: every resource in its step, in order; what is kept; what blocks."""

from __future__ import annotations

from typing import Any

from hypd.teardown.plan import BRANCHES, STAGES, Blocker, Inventory, Resource, Workload, plan


def inventory(**fields: Any) -> Inventory:
    base: dict[str, Any] = {"tag": "t", "created_by_hypd": True, "protected": False,
                            "status": "ACTIVE"}
    return Inventory(**{**base, **fields})


def full() -> Inventory:
    return inventory(
        workloads=(Workload("HyperPodPyTorchJob", "default", "done", "Succeeded"),),
        quotas=(Resource("ComputeQuota", "ml", "arn:q"),),
        scheduler_configs=(Resource("ClusterSchedulerConfig", "hypd-t", "arn:s"),),
        hyperpod=Resource("HyperPodCluster", "hypd-t", "arn:hp"),
        addons=(Resource("EksAddon", "amazon-sagemaker-hyperpod-training-operator"),
                Resource("EksAddon", "cert-manager")),
        associations=(Resource("PodIdentityAssociation", "a-1"),),
        eks=Resource("EksCluster", "hypd-t", "arn:eks"),
        file_systems=(Resource("FsxFileSystem", "fs-1"),),
        subnets=(Resource("Subnet", "subnet-1"),),
        stack=Resource("CloudFormationStack", "hypd-t-network", "arn:stack"),
        roles=(Resource("IamRole", "hypd-t-training-operator", "arn:role"),),
        oidc_providers=(Resource("OidcProvider", "oidc.eks/id/X", "arn:oidc"),),
        workspaces=(Resource("AmpWorkspace", "hypd-t", "arn:ws"),),
        tls_buckets=(Resource("S3Bucket", "hyperpod-tls-t-0123456789ab", "arn:b"),),
        kept=((Resource("S3Bucket", "data"), "the user's data"),),
    )


def test_every_resource_is_in_its_step_in_order() -> None:
    view = plan(full()).view()
    assert [s["stage"] for s in view["steps"]] == list(STAGES)
    names = {s["stage"]: [r["name"] for r in s["resources"]] for s in view["steps"]}
    assert names == {
        "workloads": ["done"], "governance": ["ml", "hypd-t"], "hyperpod": ["hypd-t"],
        "addons": ["amazon-sagemaker-hyperpod-training-operator", "cert-manager", "a-1"],
        "eks": ["hypd-t"], "storage": ["fs-1"], "network": ["subnet-1", "hypd-t-network"],
        "roles": ["hypd-t-training-operator", "oidc.eks/id/X", "hypd-t",
                  "hyperpod-tls-t-0123456789ab"], "record": ["t"],
    }
    assert view["kept"] == [{"type": "S3Bucket", "name": "data", "reason": "the user's data"}]
    assert view["parallel"] == [list(b) for b in BRANCHES]
    assert view["deletable"] is True
    assert view["blockers"] == []


def test_a_cluster_already_half_gone_plans_only_what_is_left() -> None:
    steps = {s["stage"]: s["resources"] for s in plan(inventory(
        file_systems=(Resource("FsxFileSystem", "fs-1"),))).view()["steps"]}
    assert [r["name"] for r in steps["storage"]] == ["fs-1"]
    assert all(steps[s] == [] for s in STAGES if s not in ("storage", "record"))


def test_blockers() -> None:
    running = Workload("HyperPodPyTorchJob", "default", "train", "Running")
    endpoint = Workload("JumpStartModel", "default", "ep", "DeploymentComplete")
    found = plan(inventory(created_by_hypd=False, protected=True,
                           workloads=(running, endpoint),
                           running_operation={"operationId": "op-1", "kind": "scale",
                                              "status": "RUNNING"}))
    assert [b.code for b in found.blockers] == [
        "NotCreatedByHypd", "DeletionProtected", "WorkloadsRunning", "OperationRunning"]
    workloads = found.blockers[2]
    assert workloads.details == {"workloads": ["HyperPodPyTorchJob/default/train",
                                               "JumpStartModel/default/ep"]}
    assert "force=true" in workloads.message
    assert "forget=true" in found.blockers[0].message

    forced = plan(inventory(workloads=(running,)), force=True)
    assert forced.blockers == ()
    assert forced.view()["force"] is True


def test_unreadable_workloads_block_unless_forced() -> None:
    unknown = inventory(kubernetes_error="connection refused")
    assert [b.code for b in plan(unknown).blockers] == ["WorkloadsUnknown"]
    assert plan(unknown, force=True).blockers == ()


def test_finished_jobs_do_not_block() -> None:
    done = Workload("HyperPodPyTorchJob", "default", "old", "Failed")
    assert not done.running
    assert plan(inventory(workloads=(done,))).blockers == ()


def test_the_state_machine_runs_the_plans_parallel_branches() -> None:
    from statemachines.generate import TEARDOWN_BRANCHES

    assert TEARDOWN_BRANCHES == BRANCHES


def test_a_cluster_deleted_or_being_deleted_blocks_another_teardown() -> None:
    deleted = Blocker("ClusterDeleted", "cluster t was deleted")
    assert [b.code for b in plan(inventory(held=deleted), force=True).blockers] == [
        "ClusterDeleted"]
    failed = Blocker("ClusterDeleting", "POST /operations/op-1/retry resumes it")
    assert [b.code for b in plan(inventory(held=failed)).blockers] == ["ClusterDeleting"]
    # While the teardown runs, the running operation is what blocks (named once).
    running = inventory(held=failed, running_operation={
        "operationId": "op-1", "kind": "delete-cluster", "status": "RUNNING"})
    assert [b.code for b in plan(running).blockers] == ["OperationRunning"]
