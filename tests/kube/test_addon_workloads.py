"""EKS add-ons' objects in their cluster's Kubernetes API, kept by the local cloud's Kubernetes
sync on every tick (`hypd_local.emulation_workloads`): namespaces, CRDs served, controller
Deployments whose status follows the nodes, CSIDriver objects; gone with the add-on.

The sync runs as `Emulation.tick` runs it, on a virtual clock the tests move (nothing sleeps);
the objects are read from the cluster's store, and with the real kubectl."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, cast

import pytest

from hypd_local.clock import VirtualClock
from hypd_local.emulation import Emulation
from hypd_local.emulation_workloads import AddonWorkloadSync, find_object
from hypd_local.emulator.eks import EksDurations, EksEmulator
from hypd_local.emulator.eks_workloads import MANAGER, WORKLOADS
from hypd_local.kube import KubeApiRegistry, KubeApiServer
from hypd_local.kube.resources import CRD_GROUP, CRD_PLURAL
from tests.emulator.test_eks import INFERENCE_CONFIG, TRAINING
from tests.kubectl import Kubectl

ACCOUNT = "123456789012"
REGION = "us-west-2"
D = EksDurations()
INFERENCE = "amazon-sagemaker-hyperpod-inference"
TASK_GOVERNANCE = "amazon-sagemaker-hyperpod-taskgovernance"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/eks-cluster"


class Cloud:
    """An `Emulation` with a plain EKS emulator and the Kubernetes APIs it serves."""

    def __init__(self) -> None:
        self.clock = VirtualClock(ticking=False)
        self.emulation = Emulation(clock=self.clock, emit=lambda *_a, **_k: None,
                                   account_id=ACCOUNT, region=REGION)
        self.eks = EksEmulator(self.clock, lambda **_k: None, ACCOUNT, REGION)
        self.emulation.eks = self.eks
        self.kube = KubeApiRegistry(self.clock, sts_endpoint=None, tls_enabled=False)
        self.emulation.kube = self.kube

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.emulation.tick(wait=True)

    def server(self, name: str = "ml") -> KubeApiServer:
        server = self.kube.get(name)
        assert server is not None
        return server

    def addon(self, name: str, **extra: Any) -> None:
        self.eks.create_addon({"clusterName": "ml", "addonName": name, **extra})


@pytest.fixture
def cloud() -> Iterator[Cloud]:
    made = Cloud()
    made.eks.create_cluster({"name": "ml", "roleArn": ROLE,
                             "resourcesVpcConfig": {"subnetIds": ["subnet-a", "subnet-b"]},
                             "accessConfig": {"authenticationMode": "API"}})
    made.advance(12 * 60)
    yield made
    made.kube.stop_all()


def find(server: KubeApiServer, group: str, plural: str, namespace: str | None,
         name: str) -> dict[str, Any] | None:
    store = server.store
    rtype = next(t for t in store.all_types() if (t.group, t.plural) == (group, plural))
    return find_object(store, rtype, namespace, name)


def crd(server: KubeApiServer, name: str) -> dict[str, Any] | None:
    return find(server, CRD_GROUP, CRD_PLURAL, None, name)


def deployment(server: KubeApiServer, namespace: str, name: str) -> dict[str, Any] | None:
    return find(server, "apps", "deployments", namespace, name)


def namespace(server: KubeApiServer, name: str) -> dict[str, Any] | None:
    return find(server, "", "namespaces", None, name)


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj["status"]["conditions"]}


def managers(obj: dict[str, Any]) -> set[str]:
    return {entry["manager"] for entry in obj["metadata"].get("managedFields") or []}


def test_the_training_operator_s_objects_come_and_go_with_the_addon(cloud: Cloud) -> None:
    for prerequisite in ("cert-manager", "eks-pod-identity-agent"):
        cloud.addon(prerequisite)
    cloud.addon(TRAINING)
    server = cloud.server()
    cloud.advance(D.addon_create - 1)
    assert crd(server, "hyperpodpytorchjobs.sagemaker.amazonaws.com") is None  # CREATING
    cloud.advance(1)

    job_crd = crd(server, "hyperpodpytorchjobs.sagemaker.amazonaws.com")
    assert job_crd is not None
    assert job_crd["spec"]["scope"] == "Namespaced"
    assert job_crd["spec"]["names"]["kind"] == "HyperPodPyTorchJob"
    assert [(v["name"], v["served"], v["storage"]) for v in job_crd["spec"]["versions"]] == [
        ("v1", True, True)]
    assert managers(job_crd) == {MANAGER}
    assert server.store.find_type("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs")
    assert namespace(server, "aws-hyperpod") is not None
    controller = deployment(server, "aws-hyperpod", "hp-training-operator-controller-manager")
    assert controller is not None
    assert managers(controller) == {MANAGER}
    assert controller["spec"]["replicas"] == 1
    assert controller["metadata"]["labels"]["app.kubernetes.io/version"] == "v1.2.1-eksbuild.1"
    # no node: its pod cannot run
    status = controller["status"]
    assert "readyReplicas" not in status
    assert "availableReplicas" not in status
    assert status["unavailableReplicas"] == 1
    available = conditions(controller)["Available"]
    assert (available["status"], available["reason"]) == ("False", "MinimumReplicasUnavailable")
    assert deployment(server, "cert-manager", "cert-manager") is not None
    assert crd(server, "clusterissuers.cert-manager.io")["spec"]["scope"] == "Cluster"  # type: ignore[index]

    server.join_node("hyperpod-i-0ready", {})
    cloud.advance(1)
    controller = deployment(server, "aws-hyperpod", "hp-training-operator-controller-manager")
    assert controller is not None
    assert (controller["status"]["readyReplicas"],
            controller["status"]["availableReplicas"]) == (1, 1)
    available = conditions(controller)["Available"]
    assert (available["status"], available["reason"]) == ("True", "MinimumReplicasAvailable")
    version = controller["metadata"]["resourceVersion"]
    cloud.advance(60)  # nothing changed: no new write
    assert deployment(server, "aws-hyperpod", "hp-training-operator-controller-manager")[
        "metadata"]["resourceVersion"] == version  # type: ignore[index]

    jobs = server.store.find_type("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs")
    assert jobs is not None
    server.store.create(jobs, "default", {"metadata": {"name": "llama"}, "spec": {}}, "kubectl")
    cloud.eks.delete_addon({"clusterName": "ml", "addonName": TRAINING})
    cloud.advance(D.addon_delete - 1)
    assert crd(server, "hyperpodpytorchjobs.sagemaker.amazonaws.com") is not None  # DELETING
    cloud.advance(1)
    assert crd(server, "hyperpodpytorchjobs.sagemaker.amazonaws.com") is None
    assert server.store.find_type("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs") is None
    # the custom resources went with their CRD: a CRD made again serves none
    server.ensure_crds([WORKLOADS[TRAINING].crds[0].manifest()], "someone")
    jobs = server.store.find_type("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs")
    assert jobs is not None
    assert server.store.list(jobs, None)[0] == []
    server.store.delete(server.store.builtin_type(CRD_GROUP, CRD_PLURAL), None,
                        "hyperpodpytorchjobs.sagemaker.amazonaws.com")
    assert deployment(server, "aws-hyperpod",
                      "hp-training-operator-controller-manager") is None
    assert namespace(server, "aws-hyperpod") is None
    assert crd(server, "certificates.cert-manager.io") is not None  # the other add-on's stay


def test_a_namespace_with_someone_else_s_objects_stays(cloud: Cloud) -> None:
    cloud.addon("metrics-server")
    cloud.addon(TASK_GOVERNANCE)
    cloud.advance(D.addon_create)
    server = cloud.server()
    assert deployment(server, "kube-system", "metrics-server") is not None
    scopes = {plural: crd(server, f"{plural}.kueue.x-k8s.io")["spec"]["scope"]  # type: ignore[index]
              for plural in ("clusterqueues", "localqueues", "workloads", "resourceflavors",
                             "workloadpriorityclasses")}
    assert scopes == {"clusterqueues": "Cluster", "localqueues": "Namespaced",
                      "workloads": "Namespaced", "resourceflavors": "Cluster",
                      "workloadpriorityclasses": "Cluster"}
    config_maps = server.store.builtin_type("", "configmaps")
    server.store.create(config_maps, "kueue-system", {"metadata": {"name": "mine"}}, "kubectl")
    for name in ("metrics-server", TASK_GOVERNANCE):
        cloud.eks.delete_addon({"clusterName": "ml", "addonName": name})
    cloud.advance(D.addon_delete)
    assert deployment(server, "kueue-system", "kueue-controller-manager") is None
    assert crd(server, "clusterqueues.kueue.x-k8s.io") is None
    assert namespace(server, "kueue-system") is not None  # the config map is not EKS's
    assert deployment(server, "kube-system", "metrics-server") is None
    assert namespace(server, "kube-system") is not None


def test_csi_drivers_and_the_inference_operator_s_served_versions(cloud: Cloud) -> None:
    for name in ("aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver", "metrics-server",
                 "cert-manager"):
        cloud.addon(name)
    cloud.advance(D.addon_create)
    server = cloud.server()
    for driver in ("s3.csi.aws.com", "fsx.csi.aws.com"):
        found = find(server, "storage.k8s.io", "csidrivers", None, driver)
        assert found is not None
        assert managers(found) == {MANAGER}
    cloud.addon(INFERENCE, configurationValues=INFERENCE_CONFIG)
    cloud.advance(D.addon_create)
    for plural in ("inferenceendpointconfigs", "jumpstartmodels",
                   "sagemakerendpointregistrations"):
        group = "inference.sagemaker.aws.amazon.com"
        stored = server.store.find_type(group, "v1", plural)
        served = server.store.find_type(group, "v1alpha1", plural)
        assert stored is not None
        assert (stored.storage, stored.namespaced) == (True, True)
        assert served is not None
        assert not served.storage
    assert deployment(server, "hyperpod-inference-system",
                      "hyperpod-inference-controller-manager") is not None

    # preserve: the software stays, unmanaged; without: it goes
    cloud.eks.delete_addon({"clusterName": "ml", "addonName": "aws-mountpoint-s3-csi-driver",
                            "preserve": True})
    cloud.eks.delete_addon({"clusterName": "ml", "addonName": "aws-fsx-csi-driver"})
    cloud.advance(D.addon_delete)
    assert find(server, "storage.k8s.io", "csidrivers", None, "s3.csi.aws.com") is not None
    assert find(server, "storage.k8s.io", "csidrivers", None, "fsx.csi.aws.com") is None


def test_a_failed_creation_writes_nothing_and_a_deleted_cluster_takes_everything(
    cloud: Cloud,
) -> None:
    cloud.addon(INFERENCE, configurationValues=INFERENCE_CONFIG)
    cloud.advance(D.addon_create)
    server = cloud.server()
    assert crd(server, "jumpstartmodels.inference.sagemaker.aws.amazon.com") is None
    assert namespace(server, "hyperpod-inference-system") is None
    cloud.eks.delete_cluster({"name": "ml"})
    cloud.advance(D.cluster_delete)
    assert cloud.kube.names() == []
    assert cloud.emulation._addon_namespaces == {}


# --------------------------------------------------------------------------- kubectl


class _Sync(AddonWorkloadSync):
    def __init__(self, eks: EksEmulator) -> None:
        self.region = REGION
        self.eks = eks
        self._addon_namespaces = {}


class _One:
    def __init__(self, server: KubeApiServer) -> None:
        self.server = server

    def get(self, name: str) -> KubeApiServer | None:
        return self.server if name == "ml" else None


def _columns(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_kubectl_shows_the_addons_objects(kubectl: Kubectl, server: KubeApiServer,
                                          clock: VirtualClock) -> None:
    eks = EksEmulator(clock, lambda **_k: None, ACCOUNT, REGION)
    eks.create_cluster({"name": "ml", "roleArn": ROLE,
                        "resourcesVpcConfig": {"subnetIds": ["subnet-a", "subnet-b"]}})
    clock.advance(12 * 60)
    for name in ("cert-manager", "aws-fsx-csi-driver"):
        eks.create_addon({"clusterName": "ml", "addonName": name})
    clock.advance(D.addon_create)
    server.join_node("hyperpod-i-0ready", {})
    _Sync(eks)._sync_addon_workloads(cast(Any, _One(server)), ["ml"])

    table = _columns(kubectl.run("get", "deployments", "-n", "cert-manager"))
    assert table[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table[1][:4] == ["cert-manager", "1/1", "1", "1"]
    crds = kubectl.run("get", "crds", "-o", "name")
    assert "customresourcedefinition.apiextensions.k8s.io/issuers.cert-manager.io" in crds
    drivers = _columns(kubectl.run("get", "csidrivers"))
    assert drivers[0][:7] == ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY",
                              "TOKENREQUESTS", "REQUIRESREPUBLISH", "MODES"]
    assert drivers[1][:7] == ["fsx.csi.aws.com", "false", "false", "false", "<unset>",
                              "false", "Persistent"]
    assert kubectl.run("get", "certificates.cert-manager.io", "-A").strip() == ""  # served
