"""What EKS add-ons put into their cluster's Kubernetes API: a table (`WORKLOADS`) and the
objects built from it.

For each add-on: its namespace, the CustomResourceDefinitions it installs (group, kind, plural,
scope, served versions and the storage version), its controller Deployment and its CSIDriver
objects. The local cloud's Kubernetes sync (`hypd_local.emulation_kube`) writes them while the
add-on is installed and removes them when it is gone; the add-on's managed features are read
back from them (CRDs served, the controller Deployment available).

The identities are the documented ones (../shared/docs/FEATURES-FACTS.md and the add-ons'
own documentation): HyperPodPyTorchJob (``sagemaker.amazonaws.com/v1``), the inference
operator's kinds (``inference.sagemaker.aws.amazon.com``, ``v1`` stored, ``v1alpha1`` served),
Kueue's (``kueue.x-k8s.io/v1beta1``), cert-manager's (``cert-manager.io/v1``), the CSI drivers'
names. What the emulator makes up: the CRDs' schemas (they keep unknown fields, validate
nothing), the Deployments' labels, container names and images, the CSIDriver specs' details.

A Deployment's status follows the cluster's nodes, as its pods would: with a Ready node its one
replica is ready and available (condition ``Available`` True); without, it is unavailable
(``Available`` False, reason ``MinimumReplicasUnavailable``), and, as Kubernetes omits zero
counts, ``readyReplicas`` and ``availableReplicas`` are absent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypd_local.kube.resources import crd_manifest

Obj = dict[str, Any]

MANAGER = "eks"
"""The field manager of what EKS writes for an add-on (managedFields' ``manager``)."""

RUNNING_STATUSES = frozenset({"ACTIVE", "DEGRADED", "UPDATING", "UPDATE_FAILED"})
"""Add-on statuses in which its objects exist in the cluster."""


@dataclass(frozen=True)
class Crd:
    group: str
    kind: str
    plural: str
    namespaced: bool
    served: tuple[str, ...] = ("v1",)
    storage: str = "v1"

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    def manifest(self) -> Obj:
        return crd_manifest(self.group, self.kind, self.plural, namespaced=self.namespaced,
                            served=self.served, storage=self.storage)


@dataclass(frozen=True)
class Deployment:
    namespace: str
    """The add-on's default namespace (an add-on created with ``namespaceConfig`` runs its
    controller in that namespace instead)."""
    name: str


@dataclass(frozen=True)
class CsiDriver:
    name: str
    pod_info_on_mount: bool = False


@dataclass(frozen=True)
class AddonWorkloads:
    addon: str
    namespace: str
    crds: tuple[Crd, ...] = ()
    deployment: Deployment | None = None
    csi_drivers: tuple[CsiDriver, ...] = ()


def _crds(group: str, namespaced: Mapping[str, bool], kinds: Sequence[tuple[str, str]],
          served: tuple[str, ...] = ("v1",), storage: str = "v1") -> tuple[Crd, ...]:
    return tuple(Crd(group, kind, plural, namespaced[plural], served, storage)
                 for kind, plural in kinds)


_INFERENCE_GROUP = "inference.sagemaker.aws.amazon.com"
_KUEUE_GROUP = "kueue.x-k8s.io"

WORKLOADS: Mapping[str, AddonWorkloads] = {w.addon: w for w in (
    AddonWorkloads(
        "amazon-sagemaker-hyperpod-training-operator", "aws-hyperpod",
        crds=(Crd("sagemaker.amazonaws.com", "HyperPodPyTorchJob", "hyperpodpytorchjobs", True),),
        deployment=Deployment("aws-hyperpod", "hp-training-operator-controller-manager")),
    AddonWorkloads(
        "amazon-sagemaker-hyperpod-inference", "hyperpod-inference-system",
        crds=_crds(_INFERENCE_GROUP, {"inferenceendpointconfigs": True, "jumpstartmodels": True,
                                      "sagemakerendpointregistrations": True},
                   [("InferenceEndpointConfig", "inferenceendpointconfigs"),
                    ("JumpStartModel", "jumpstartmodels"),
                    ("SageMakerEndpointRegistration", "sagemakerendpointregistrations")],
                   served=("v1", "v1alpha1")),
        deployment=Deployment("hyperpod-inference-system",
                              "hyperpod-inference-controller-manager")),
    AddonWorkloads(
        "amazon-sagemaker-hyperpod-observability", "hyperpod-observability",
        deployment=Deployment("hyperpod-observability", "hyperpod-observability-operator")),
    AddonWorkloads(
        "amazon-sagemaker-hyperpod-taskgovernance", "kueue-system",
        crds=_crds(_KUEUE_GROUP, {"clusterqueues": False, "localqueues": True, "workloads": True,
                                  "resourceflavors": False, "workloadpriorityclasses": False},
                   [("ClusterQueue", "clusterqueues"), ("LocalQueue", "localqueues"),
                    ("Workload", "workloads"), ("ResourceFlavor", "resourceflavors"),
                    ("WorkloadPriorityClass", "workloadpriorityclasses")],
                   served=("v1beta1",), storage="v1beta1"),
        deployment=Deployment("kueue-system", "kueue-controller-manager")),
    AddonWorkloads(
        "cert-manager", "cert-manager",
        crds=_crds("cert-manager.io", {"certificates": True, "issuers": True,
                                       "clusterissuers": False},
                   [("Certificate", "certificates"), ("Issuer", "issuers"),
                    ("ClusterIssuer", "clusterissuers")]),
        deployment=Deployment("cert-manager", "cert-manager")),
    AddonWorkloads("metrics-server", "kube-system",
                   deployment=Deployment("kube-system", "metrics-server")),
    AddonWorkloads("aws-mountpoint-s3-csi-driver", "kube-system",
                   csi_drivers=(CsiDriver("s3.csi.aws.com", pod_info_on_mount=True),)),
    AddonWorkloads("aws-fsx-csi-driver", "kube-system",
                   csi_drivers=(CsiDriver("fsx.csi.aws.com"),)),
)}
"""The Kubernetes objects of each add-on that has some, by add-on name."""


# --------------------------------------------------------------------------- objects


def namespace_manifest(name: str) -> Obj:
    return {"metadata": {"name": name}}


def _labels(name: str, addon: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": addon,
            "app.kubernetes.io/managed-by": "EKS"}


def deployment_manifest(name: str, namespace: str, addon: str, version: str,
                        image_registry: str) -> Obj:
    """The controller Deployment of ``addon`` at ``version`` (without its status)."""
    labels = _labels(name, addon)
    return {
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {**labels, "app.kubernetes.io/version": version}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{
                    "name": "manager",
                    "image": f"{image_registry}/eks/{addon}:{version}",
                }]},
            },
        },
    }


def _replica_set(deployment: Obj) -> str:
    """The name of the Deployment's current ReplicaSet (the pod template's hash, as the
    Deployment controller names it)."""
    template = repr(sorted((deployment.get("spec") or {}).get("template", {}).items()))
    digest = hashlib.sha256(template.encode()).hexdigest()
    return f"{deployment['metadata']['name']}-{int(digest[:12], 16) % 10**10:010d}"[:63]


def _condition(previous: Mapping[str, Obj], kind: str, status: bool, reason: str,
               message: str, now: str) -> Obj:
    """A Deployment condition that keeps its times while it does not change."""
    old = previous.get(kind)
    value = "True" if status else "False"
    same = old is not None and (old.get("status"), old.get("reason"),
                                old.get("message")) == (value, reason, message)
    kept = old is not None and old.get("status") == value
    return {"type": kind, "status": value, "reason": reason, "message": message,
            "lastUpdateTime": old["lastUpdateTime"] if same and old else now,
            "lastTransitionTime": old["lastTransitionTime"] if kept and old else now}


def deployment_status(deployment: Obj, available: bool, now: str) -> Obj:
    """The status the Deployment controller gives a one-replica Deployment whose pod is
    (``available``) or is not running on a Ready node; ``now`` is RFC 3339."""
    previous = {c.get("type"): c for c in (deployment.get("status") or {}).get(
        "conditions") or []}
    replica_set = _replica_set(deployment)
    if available:
        availability = _condition(previous, "Available", True, "MinimumReplicasAvailable",
                                  "Deployment has minimum availability.", now)
        progress = _condition(previous, "Progressing", True, "NewReplicaSetAvailable",
                              f'ReplicaSet "{replica_set}" has successfully progressed.', now)
        counts = {"readyReplicas": 1, "availableReplicas": 1}
    else:
        availability = _condition(previous, "Available", False, "MinimumReplicasUnavailable",
                                  "Deployment does not have minimum availability.", now)
        progress = _condition(previous, "Progressing", True, "ReplicaSetUpdated",
                              f'ReplicaSet "{replica_set}" is progressing.', now)
        counts = {"unavailableReplicas": 1}
    return {
        "observedGeneration": deployment["metadata"].get("generation", 1),
        "replicas": 1,
        "updatedReplicas": 1,
        **counts,
        "conditions": [availability, progress],
    }


def csi_driver_manifest(driver: CsiDriver) -> Obj:
    return {
        "metadata": {"name": driver.name},
        "spec": {"attachRequired": False, "podInfoOnMount": driver.pod_info_on_mount,
                 "fsGroupPolicy": "ReadWriteOnceWithFSType",
                 "volumeLifecycleModes": ["Persistent"]},
    }
