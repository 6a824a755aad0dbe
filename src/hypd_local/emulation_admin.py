"""``/_local/faults/...``: the emulators' own fault hooks over HTTP (a HyperPod creation or
AutoScaling that fails, an unhealthy node, a capacity shortage, EKS creations that fail or
stall, add-ons that stall or degrade, upgrade-insight findings, how an emulated workload
behaves), with the body checks every route shares."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hypd_local.emulation_behave import ModelError
from hypd_local.emulator.eks import ADDON_ISSUE_CODES
from hypd_local.emulator.eks_upgrades import INSIGHT_STATUSES, INSIGHTS
from hypd_local.emulator.errors import AwsError
from hypd_local.emulator.hyperpod import AUTOSCALING_FAILS

if TYPE_CHECKING:
    from hypd_local.emulation import Emulation

AdminHandler = Callable[[Any], tuple[int, Any]]


def admin_routes(emulation: Emulation) -> dict[tuple[str, str], AdminHandler]:
    """``/_local/faults/...`` endpoints for the emulators' own fault hooks.

    Each takes a JSON object, answers 201 ``{"injected": <what>, ...}``; 400
    ``{"message": ...}`` naming the field when the body is wrong; the status of the AWS error
    (e.g. 404) when the emulator refuses (unknown cluster, node or add-on).
    """

    def next_fails(
        injected: str, fail: Callable[[str | None, str], None], default: str
    ) -> AdminHandler:
        """A route that makes the next operation of a cluster (or of any) fail."""

        def handler(body: Any) -> tuple[int, Any]:
            fields = _fields(body, optional={"clusterName": str, "message": str})
            message = fields.get("message") or default
            fail(fields.get("clusterName"), message)
            return 201, {"injected": injected, "clusterName": fields.get("clusterName"),
                         "message": message}

        return handler

    def hyperpod_node_unhealthy(body: Any) -> tuple[int, Any]:
        fields = _fields(
            body,
            required={"clusterName": str, "nodeId": str},
            optional={"reason": str, "action": str, "repair": bool},
        )
        action = fields.get("action", "Replace")
        if action not in ("Reboot", "Replace"):
            raise _BadField("action", 'must be "Reboot" or "Replace"')
        reason = fields.get("reason") or "GPU health check failed"
        emulation.hyperpod.make_node_unhealthy(
            fields["clusterName"], fields["nodeId"], reason, action, fields.get("repair")
        )
        emulation.tick()
        return 201, {
            "injected": "hyperpod/node-unhealthy",
            "clusterName": fields["clusterName"],
            "nodeId": fields["nodeId"],
            "reason": reason,
            "action": action,
            "repair": fields.get("repair"),
        }

    def hyperpod_insufficient_capacity(body: Any) -> tuple[int, Any]:
        fields = _fields(
            body,
            required={"instanceType": str, "availabilityZone": str},
            optional={"enabled": bool},
        )
        enabled = fields.get("enabled", True)
        emulation.hyperpod.insufficient_capacity(
            fields["instanceType"], fields["availabilityZone"], enabled
        )
        emulation.tick()  # capacity back: continuous groups launched nodes; waits must see them
        return 201, {
            "injected": "hyperpod/insufficient-capacity",
            "instanceType": fields["instanceType"],
            "availabilityZone": fields["availabilityZone"],
            "enabled": enabled,
        }

    def eks_create_fails(body: Any) -> tuple[int, Any]:
        fields = _fields(body, optional={"name": str, "message": str})
        emulation.eks.fail_next_cluster(fields.get("name"), fields.get("message") or "")
        return 201, {
            "injected": "eks/create-fails",
            "name": fields.get("name"),
            "message": fields.get("message"),
        }

    def eks_unsupported_zones(body: Any) -> tuple[int, Any]:
        fields = _fields(body, required={"zones": list})
        zones = fields["zones"]
        if not all(isinstance(zone, str) and zone for zone in zones):
            raise _BadField("zones", "must be a list of zone names")
        emulation.eks.set_unsupported_zones(zones)
        return 201, {"injected": "eks/unsupported-zones", "zones": sorted(zones)}

    def eks_create_stalls(body: Any) -> tuple[int, Any]:
        fields = _fields(body, optional={"name": str, "seconds": int, "release": bool})
        if fields.get("release"):
            if "name" not in fields:
                raise _BadField("name", "is required to release a stalled creation")
            emulation.eks.release_cluster(fields["name"])
        else:
            emulation.eks.stall_next_cluster(fields.get("name"), fields.get("seconds"))
        emulation.tick()
        return 201, {"injected": "eks/create-stalls", **fields}

    def eks_addon_stalls(body: Any) -> tuple[int, Any]:
        fields = _fields(
            body,
            required={"clusterName": str, "addonName": str},
            optional={"seconds": int, "release": bool},
        )
        if fields.get("release"):
            emulation.eks.release_addon(fields["clusterName"], fields["addonName"])
        else:
            emulation.eks.stall_addon(
                fields["clusterName"], fields["addonName"], fields.get("seconds")
            )
        emulation.tick()
        return 201, {"injected": "eks/addon-stalls", **fields}

    def eks_addon_degraded(body: Any) -> tuple[int, Any]:
        fields = _fields(
            body,
            required={"clusterName": str, "addonName": str},
            optional={"issueCode": str, "message": str},
        )
        code = fields.get("issueCode", "InsufficientNumberOfReplicas")
        if code not in ADDON_ISSUE_CODES:
            raise _BadField("issueCode", f"must be one of {', '.join(ADDON_ISSUE_CODES)}")
        emulation.eks.degrade_addon(
            fields["clusterName"], fields["addonName"], code, fields.get("message") or ""
        )
        emulation.tick()
        return 201, {
            "injected": "eks/addon-degraded",
            "clusterName": fields["clusterName"],
            "addonName": fields["addonName"],
            "issueCode": code,
        }

    def eks_insight(body: Any) -> tuple[int, Any]:
        fields = _fields(
            body,
            required={"clusterName": str},
            optional={"insight": str, "status": str, "reason": str, "recommendation": str,
                      "deprecationDetails": list, "addonCompatibilityDetails": list,
                      "resources": list, "additionalInfo": dict},
        )
        insight = fields.get("insight", "deprecated-apis")
        if insight not in INSIGHTS:
            raise _BadField("insight", f"must be one of {', '.join(INSIGHTS)}")
        status = fields.get("status", "ERROR")
        if status not in INSIGHT_STATUSES:
            raise _BadField("status", f"must be one of {', '.join(INSIGHT_STATUSES)}")
        insight_id = emulation.eks.plant_insight(
            fields["clusterName"], insight, status, reason=fields.get("reason") or "",
            recommendation=fields.get("recommendation") or "",
            deprecation_details=fields.get("deprecationDetails"),
            addon_compatibility_details=fields.get("addonCompatibilityDetails"),
            resources=fields.get("resources"), additional_info=fields.get("additionalInfo"))
        emulation.tick()
        return 201, {"injected": "eks/insight", "clusterName": fields["clusterName"],
                     "insight": insight, "status": status, "id": insight_id}

    def workloads_behave(body: Any) -> tuple[int, Any]:
        fields = _fields(
            body,
            required={"namespace": str, "name": str},
            optional={"clusterName": str, "seconds": _NUMBER, "exitCode": int, "logs": list,
                      "response": str, "modelError": dict},
        )
        logs = fields.get("logs")
        if logs is not None and not all(isinstance(line, str) for line in logs):
            raise _BadField("logs", "must be a list of strings")
        error = fields.get("modelError")
        if error is not None:
            error = _fields(error, required={"status": int, "message": str})
        emulation.workloads.behave(
            fields["namespace"], fields["name"], seconds=fields.get("seconds"),
            exit_code=fields.get("exitCode"), logs=logs, response=fields.get("response"),
            model_error=ModelError(error["status"], error["message"]) if error else None,
            cluster=fields.get("clusterName"))
        emulation.tick()
        return 201, {"injected": "workloads/behave", **fields}

    handlers: dict[str, AdminHandler] = {
        "hyperpod/create-fails": next_fails(
            "hyperpod/create-fails", emulation.hyperpod.fail_next_create,
            "Cluster creation failed: lifecycle script exited with a non-zero code."),
        "hyperpod/autoscaling-fails": next_fails(
            "hyperpod/autoscaling-fails", emulation.hyperpod.fail_next_autoscaling,
            AUTOSCALING_FAILS),
        "hyperpod/node-unhealthy": hyperpod_node_unhealthy,
        "hyperpod/insufficient-capacity": hyperpod_insufficient_capacity,
        "eks/create-fails": eks_create_fails,
        "eks/create-stalls": eks_create_stalls,
        "eks/unsupported-zones": eks_unsupported_zones,
        "eks/addon-stalls": eks_addon_stalls,
        "eks/addon-degraded": eks_addon_degraded,
        "eks/insight": eks_insight,
        "workloads/behave": workloads_behave,
    }
    return {
        ("POST", f"/_local/faults/{path}"): _guarded(handler)
        for path, handler in handlers.items()
    }


class _BadField(ValueError):
    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")


_NUMBER = (int, float)

_TYPE_NAMES: dict[Any, str] = {str: "a string", bool: "a boolean", _NUMBER: "a number",
                               int: "an integer", list: "a list", dict: "an object"}


def _fields(
    body: Any,
    required: Mapping[str, Any] | None = None,
    optional: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The body's fields, checked: an object, required fields present, types right, no others."""
    required = dict(required or {})
    optional = dict(optional or {})
    if body is None and not required:
        return {}
    if not isinstance(body, dict):
        raise _BadField("body", "expected a JSON object")
    unknown = sorted(set(body) - set(required) - set(optional))
    if unknown:
        expected = ", ".join([*required, *optional])
        raise _BadField(unknown[0], f"unknown field (expected {expected})")
    out: dict[str, Any] = {}
    for name, kind in {**required, **optional}.items():
        value = body.get(name)
        if value is None:
            if name in required:
                raise _BadField(name, "is required")
            continue
        if (not isinstance(value, kind) or (kind is str and not value)
                or (kind is not bool and isinstance(value, bool))):
            raise _BadField(
                name,
                f"must be {_TYPE_NAMES.get(kind) or kind.__name__}"
                + (" (not empty)" if kind is str else ""),
            )
        out[name] = value
    return out


def _guarded(handler: AdminHandler) -> AdminHandler:
    """400 for a bad body, the AWS error's status for an emulator's refusal."""

    def run(body: Any) -> tuple[int, Any]:
        try:
            return handler(body)
        except _BadField as exc:
            return 400, {"message": str(exc)}
        except AwsError as exc:  # e.g. SageMaker's ResourceNotFound, which AWS sends as 400
            status = 404 if "NotFound" in exc.code else exc.status
            return status, {"message": exc.message, "code": exc.code}
        except ValueError as exc:
            return 400, {"message": str(exc)}

    return run
