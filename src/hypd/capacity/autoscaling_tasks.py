"""The stages of managed Karpenter's operations (enable_autoscaling, disable_autoscaling
.asl.json) that only they have: the prerequisites, the cluster role and the Kubernetes objects.
Their hyperpod stage and their end are the shared tasks' (`hypd.capacity.tasks`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypd.aws import iam as iam_api
from hypd.capacity import autoscaling
from hypd.capacity.inputs import AutoscalingInput
from hypd.capacity.services import CapacityServices
from hypd.capacity.task_router import load_as, polled, router
from hypd.errors import OperationStateError, PermanentError
from hypd.kubernetes.apply import apply_manifests, delete_object, read_object
from hypd.operations.steps import OperationInput, poll_result, ready, summary

KARPENTER_CHECK_SECONDS = 15
KARPENTER_TIMEOUT_SECONDS = 10 * 60


class AutoscalingPrerequisite(PermanentError):
    """A documented prerequisite of managed Karpenter is not met."""

    code = "AutoscalingPrerequisite"


class NodeClassNotReady(PermanentError):
    """The HyperpodNodeClass or NodePool did not become Ready."""

    code = "NodeClassNotReady"


class KarpenterObjectConflict(PermanentError):
    """A NodeClass or NodePool of hypd's name exists that hypd did not make."""

    code = "KarpenterObjectConflict"


def settings_of(request: AutoscalingInput) -> autoscaling.AutoscalingSettings:
    """The autoscaling settings an enable operation recorded."""
    if request.settings is None:
        raise OperationStateError("the operation recorded no autoscaling settings")
    return request.settings


@router.task("check-prerequisites", OperationInput)
def check_prerequisites(task: OperationInput, services: CapacityServices) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, request = load_as(services, task.operation_id, AutoscalingInput)
        settings = settings_of(request)
        live = services.live(request.tag)
        problems = autoscaling.cluster_problems(live) + [
            f"{p.field}: {p.message}"
            for p in autoscaling.group_problems(live, settings.instance_groups)
        ]
        agent = read_object(
            services.kubernetes(request.tag),
            "apps/v1",
            "DaemonSet",
            autoscaling.HEALTH_AGENT_NAME,
            autoscaling.HEALTH_AGENT_NAMESPACE,
        )
        if agent is None:
            problems.append(
                "the HyperPod health-monitoring agent is not installed (DaemonSet "
                f"{autoscaling.HEALTH_AGENT_NAMESPACE}/{autoscaling.HEALTH_AGENT_NAME} of "
                "the HyperPod dependency chart)"
            )
        if problems:
            raise AutoscalingPrerequisite(
                f"cluster {request.tag} cannot use managed Karpenter: " + "; ".join(problems),
                details={"problems": problems},
            )
        return {
            "instanceGroups": list(settings.instance_groups),
            "warnings": autoscaling.warnings(live, settings.instance_groups),
        }

    services.steps.step(
        task, "prerequisites", work, start=True, complete=True, summarize=lambda r: r
    )
    return {}


@router.task("ensure-cluster-role", OperationInput)
def ensure_cluster_role(task: OperationInput, services: CapacityServices) -> dict[str, Any]:
    def work() -> autoscaling.RoleOutput:
        _operation, request = load_as(services, task.operation_id, AutoscalingInput)
        live = services.live(request.tag)
        return ensure_role(services, request.tag, live.arn)

    services.steps.step(task, "role", work, start=True, complete=True,
                        summarize=lambda r: r.model_dump(by_alias=True))
    return {}


@router.task("delete-cluster-role", OperationInput)
def delete_cluster_role(task: OperationInput, services: CapacityServices) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, request = load_as(services, task.operation_id, AutoscalingInput)
        name = autoscaling.role_name(request.tag)
        return {"roleName": name, "deleted": iam_api.delete_role(services.client("iam"), name)}

    services.steps.step(task, "role", work, start=True, complete=True, summarize=lambda r: r)
    return {}


def karpenter_objects(api: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    return (
        read_object(api, autoscaling.NODE_CLASS_API, autoscaling.NODE_CLASS_KIND,
                    autoscaling.OBJECT_NAME),
        read_object(api, autoscaling.NODE_POOL_API, autoscaling.NODE_POOL_KIND,
                    autoscaling.OBJECT_NAME),
    )


def ours(obj: Mapping[str, Any] | None) -> bool:
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in autoscaling.MANAGED_BY.items())


@polled("apply-karpenter", "check-karpenter")
def apply_karpenter(
    task: OperationInput, services: CapacityServices, *, start: bool
) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        operation, request = load_as(services, task.operation_id, AutoscalingInput)
        settings = settings_of(request)
        live = services.live(request.tag)
        api = services.kubernetes(request.tag)
        manifests = [
            autoscaling.node_class(settings),
            autoscaling.node_pool(
                settings, autoscaling.instance_types(live, settings.instance_groups)
            ),
        ]
        current = karpenter_objects(api)
        for obj, manifest in zip(current, manifests, strict=True):
            if obj is not None and not ours(obj):
                raise KarpenterObjectConflict(
                    f"a {manifest['kind']} named {autoscaling.OBJECT_NAME} exists in "
                    f"cluster {request.tag} and was not made by hypd; remove or rename it",
                    details={"kind": manifest["kind"], "name": autoscaling.OBJECT_NAME},
                )
        if not all(
            autoscaling.spec_matches(obj, manifest)
            for obj, manifest in zip(current, manifests, strict=True)
        ):
            apply_manifests(api, manifests)
            current = karpenter_objects(api)
        named = autoscaling.OBJECT_NAME
        problems = [
            problem
            for problem in (
                autoscaling.ready_problem(current[0], f"HyperpodNodeClass {named}"),
                autoscaling.ready_problem(current[1], f"NodePool {named}"),
            )
            if problem
        ]
        if not problems:
            return {
                **poll_result(True),
                "nodeClass": autoscaling.OBJECT_NAME,
                "nodePool": autoscaling.OBJECT_NAME,
                "instanceGroups": list(settings.instance_groups),
            }
        waited = services.steps.elapsed(operation, "kubernetes")
        if waited >= KARPENTER_TIMEOUT_SECONDS:
            raise NodeClassNotReady(
                f"after {int(waited)} s: " + "; ".join(problems),
                details={"problems": problems},
            )
        return {
            **poll_result(False, KARPENTER_CHECK_SECONDS, waiting="; ".join(problems)),
            "problems": problems,
        }

    return services.steps.step(
        task, "kubernetes", work, start=start, complete=ready, summarize=summary,
        progress=lambda r: {"problems": r.get("problems", [])} if not r["ready"] else None,
    )


@polled("remove-karpenter", "check-karpenter-removal")
def remove_karpenter(
    task: OperationInput, services: CapacityServices, *, start: bool
) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, request = load_as(services, task.operation_id, AutoscalingInput)
        api = services.kubernetes(request.tag)
        node_class, node_pool = karpenter_objects(api)
        removed: list[str] = []
        # The NodePool first: Karpenter stops launching before its NodeClass goes.
        for obj, api_version, kind in (
            (node_pool, autoscaling.NODE_POOL_API, autoscaling.NODE_POOL_KIND),
            (node_class, autoscaling.NODE_CLASS_API, autoscaling.NODE_CLASS_KIND),
        ):
            if obj is not None and ours(obj):
                delete_object(api, api_version, kind, autoscaling.OBJECT_NAME)
                removed.append(kind)
        left = [o for o in karpenter_objects(api) if o is not None and ours(o)]
        if left:
            return poll_result(
                False,
                KARPENTER_CHECK_SECONDS,
                waiting="still there: "
                + ", ".join(f"{o.get('kind')} {autoscaling.OBJECT_NAME}" for o in left),
            )
        return {**poll_result(True), "removed": removed}

    return services.steps.step(task, "kubernetes", work, start=start, complete=ready,
                               summarize=summary)


def ensure_role(
    services: CapacityServices, tag: str, cluster_arn: str
) -> autoscaling.RoleOutput:
    """The cluster role, exactly as documented: created, or brought back to its trust and
    policy. `changed` lists what had to be written (empty: it was as it should be)."""
    iam = services.client("iam")
    name = autoscaling.role_name(tag)
    trust = autoscaling.trust_policy()
    policy = autoscaling.role_policy(cluster_arn)
    changed: list[str] = []
    role = iam_api.get_role(iam, name)
    if role is None:
        role = iam_api.create_role(
            iam,
            name=name,
            path=autoscaling.ROLE_PATH,
            trust_policy=trust,
            permissions_boundary=services.settings.autoscaling_role_boundary_arn,
            description=f"HyperPod managed Karpenter of hypd cluster {tag}",
            tags=autoscaling.role_tags(tag),
        )
        changed.append("role")
    elif role.trust_policy != trust:
        iam_api.update_trust_policy(iam, name, trust)
        changed.append("trust")
    if iam_api.inline_policy(iam, name, autoscaling.ROLE_POLICY_NAME) != policy:
        iam_api.put_inline_policy(iam, name, autoscaling.ROLE_POLICY_NAME, policy)
        changed.append("policy")
    return autoscaling.RoleOutput(role_name=name, role_arn=role.arn, changed=changed)
