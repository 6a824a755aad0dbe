"""The PersistentVolume controller's static binding, as a real cluster's controller does it.

`reconcile` (as the store's `VolumeBinding` controller) runs after every write of a
PersistentVolume or PersistentVolumeClaim (and after one is deleted): it works on the stored
objects in place, and the store gives every object it changed a new ``resourceVersion``.

* A claim binds to the volume its ``spec.volumeName`` names, or else to a volume whose
  ``spec.claimRef`` names it (namespace, name and, when given, uid), when the two are
  compatible: the same ``storageClassName`` (absent counts as ""), the same ``volumeMode``
  (absent counts as Filesystem), the volume's ``accessModes`` include the claim's, and its
  ``capacity.storage`` is at least the claim's ``resources.requests.storage``; and the volume
  is not bound (``claimRef``) to another claim.
* Binding sets the volume's ``spec.claimRef`` (kind, namespace, name, uid, apiVersion) and
  ``status.phase`` Bound, and the claim's ``spec.volumeName``, the
  ``pv.kubernetes.io/bind-completed`` annotation and ``status`` (phase Bound, the volume's
  accessModes and capacity). Whichever half the controller filled in is annotated
  ``pv.kubernetes.io/bound-by-controller: "yes"``.
* Otherwise a claim is Pending (Lost once the volume it was bound to is gone), and a volume is
  Available, or Released once the claim its ``claimRef`` uid names is gone (whatever the
  reclaim policy: nothing is recycled or deleted).

Not emulated: dynamic provisioning (storage classes' provisioners), binding a claim with
neither side pre-bound to some matching Available volume, label selectors on claims, and the
``kubernetes.io/pvc-protection`` / ``kubernetes.io/pv-protection`` finalizers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"

_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

Obj = dict[str, Any]


def parse_quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity (``10Gi``, ``500M``, ``1.5e3``, ``100``) as a number; None if it
    is not one."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if match is None:
        return None
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:
        return None
    suffix = match.group(2) or ""
    if suffix in _BINARY:
        return number * (Decimal(1024) ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return number * (Decimal(10) ** _DECIMAL[suffix])
    return number * (Decimal(10) ** int(suffix[1:]))


class VolumeBinding:
    """The binding as a store controller (`store.Controller`): on volumes and claims."""

    resources = frozenset({("", "persistentvolumes"), ("", "persistentvolumeclaims")})

    def reconcile(
        self, objects: Mapping[tuple[str, str], Mapping[tuple[str, str], Obj]], now: str
    ) -> None:
        volumes = {name: obj for (_ns, name), obj in objects[("", "persistentvolumes")].items()}
        reconcile(volumes, objects[("", "persistentvolumeclaims")])


def reconcile(volumes: Mapping[str, Obj], claims: Mapping[tuple[str, str], Obj]) -> None:
    """Bind what can be bound and set every volume's and claim's phase (in place)."""
    for key in sorted(claims, key=lambda k: _claim_order(k, claims[k])):
        _reconcile_claim(key, claims[key], volumes)
    for name, volume in volumes.items():
        _reconcile_volume(name, volume, claims)


def _claim_order(key: tuple[str, str], claim: Obj) -> tuple[str, str, str]:
    return (str(claim["metadata"].get("creationTimestamp") or ""), *key)


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    return spec


def _annotate(obj: Obj, key: str) -> None:
    metadata = obj["metadata"]
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        annotations = metadata["annotations"] = {}
    annotations[key] = "yes"


def _set_phase(obj: Obj, phase: str) -> None:
    status = obj.get("status")
    if not isinstance(status, dict) or status.get("phase") != phase:
        obj["status"] = {"phase": phase}


def _claim_ref_matches(volume: Obj, namespace: str, name: str, uid: str) -> bool | None:
    """True: the volume's claimRef names this claim; False: another one; None: no claimRef."""
    ref = _spec(volume).get("claimRef")
    if not isinstance(ref, dict) or not ref:
        return None
    if (ref.get("namespace") or "", ref.get("name") or "") != (namespace, name):
        return False
    return not ref.get("uid") or ref.get("uid") == uid


def _reconcile_claim(key: tuple[str, str], claim: Obj, volumes: Mapping[str, Obj]) -> None:
    namespace, name = key
    uid = str(claim["metadata"].get("uid") or "")
    spec = _spec(claim)
    was_bound = (claim.get("status") or {}).get("phase") in ("Bound", "Lost")
    volume_name = spec.get("volumeName")
    volume: Obj | None = None
    if volume_name:
        volume = volumes.get(str(volume_name))
    else:
        for candidate_name in sorted(volumes):
            if _claim_ref_matches(volumes[candidate_name], namespace, name, uid):
                volume_name, volume = candidate_name, volumes[candidate_name]
                break
    if volume is None or volume_name is None:
        _set_phase(claim, "Lost" if was_bound else "Pending")
        return
    matches = _claim_ref_matches(volume, namespace, name, uid)
    if matches is False:
        _set_phase(claim, "Lost" if was_bound else "Pending")
        return
    bound_to_it = matches is True and (_spec(volume).get("claimRef") or {}).get("uid") == uid
    if not (bound_to_it and was_bound) and not _compatible(volume, claim):
        _set_phase(claim, "Pending")
        return
    _bind(str(volume_name), volume, namespace, name, uid, claim)


def _compatible(volume: Obj, claim: Obj) -> bool:
    v_spec, c_spec = _spec(volume), _spec(claim)
    if (v_spec.get("storageClassName") or "") != (c_spec.get("storageClassName") or ""):
        return False
    if (v_spec.get("volumeMode") or "Filesystem") != (c_spec.get("volumeMode") or "Filesystem"):
        return False
    if not set(c_spec.get("accessModes") or []) <= set(v_spec.get("accessModes") or []):
        return False
    capacity = parse_quantity((v_spec.get("capacity") or {}).get("storage"))
    requested = ((c_spec.get("resources") or {}).get("requests") or {}).get("storage")
    wanted = parse_quantity(requested) if requested is not None else Decimal(0)
    return capacity is not None and wanted is not None and capacity >= wanted


def _bind(volume_name: str, volume: Obj, namespace: str, name: str, uid: str, claim: Obj) -> None:
    v_spec, c_spec = _spec(volume), _spec(claim)
    if not v_spec.get("claimRef"):
        _annotate(volume, BOUND_BY_CONTROLLER)
    ref = dict(v_spec.get("claimRef") or {})
    ref.update(
        {
            "kind": "PersistentVolumeClaim",
            "namespace": namespace,
            "name": name,
            "uid": uid,
            "apiVersion": "v1",
        }
    )
    v_spec["claimRef"] = ref
    _set_phase(volume, "Bound")
    if not c_spec.get("volumeName"):
        _annotate(claim, BOUND_BY_CONTROLLER)
        c_spec["volumeName"] = volume_name
    _annotate(claim, BIND_COMPLETED)
    status: Obj = {"phase": "Bound"}
    if v_spec.get("accessModes"):
        status["accessModes"] = list(v_spec["accessModes"])
    if v_spec.get("capacity"):
        status["capacity"] = dict(v_spec["capacity"])
    claim["status"] = status


def _reconcile_volume(name: str, volume: Obj, claims: Mapping[tuple[str, str], Obj]) -> None:
    ref = _spec(volume).get("claimRef")
    if not isinstance(ref, dict) or not ref:
        _set_phase(volume, "Available")
        return
    claim = claims.get((str(ref.get("namespace") or ""), str(ref.get("name") or "")))
    claim_uid = None if claim is None else claim["metadata"].get("uid")
    if claim is not None and (not ref.get("uid") or ref.get("uid") == claim_uid):
        bound = (claim.get("status") or {}).get("phase") == "Bound" and (
            _spec(claim).get("volumeName") == name
        )
        _set_phase(volume, "Bound" if bound else "Available")
        return
    # The claim it was bound to is gone (Released), or it is pre-bound to one still to come.
    _set_phase(volume, "Released" if ref.get("uid") else "Available")
