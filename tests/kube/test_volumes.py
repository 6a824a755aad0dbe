"""PersistentVolumeClaim binding (the PV controller's static binding) via the official client."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from hypd_local.kube.volumes import parse_quantity

APPLY = "application/apply-patch+yaml"


def _pv(name: str, *, storage: str = "100Gi", modes: tuple[str, ...] = ("ReadWriteMany",),
        storage_class: str | None = "", claim_ref: dict[str, str] | None = None
        ) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": storage}, "accessModes": list(modes),
                            "persistentVolumeReclaimPolicy": "Retain",
                            "csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-0123",
                                    "volumeAttributes": {"dnsname": "fs-0123.fsx.aws",
                                                         "mountname": "abcdef"}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": spec}


def _pvc(name: str, *, volume: str | None = None, storage: str = "100Gi",
         modes: tuple[str, ...] = ("ReadWriteMany",), storage_class: str | None = "",
         namespace: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": list(modes),
                            "resources": {"requests": {"storage": storage}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume is not None:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def test_a_claim_naming_a_volume_binds_both(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    pv = core.create_persistent_volume(_pv("fsx-pv"))
    assert pv.status.phase == "Available"
    assert pv.spec.claim_ref is None

    claim = core.create_namespaced_persistent_volume_claim("default", _pvc("fsx", volume="fsx-pv"))

    assert claim.status.phase == "Bound"
    assert claim.status.capacity == {"storage": "100Gi"}
    assert claim.status.access_modes == ["ReadWriteMany"]
    assert claim.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    pv = core.read_persistent_volume("fsx-pv")
    assert pv.status.phase == "Bound"
    ref = pv.spec.claim_ref
    assert (ref.kind, ref.api_version, ref.namespace, ref.name, ref.uid) == (
        "PersistentVolumeClaim", "v1", "default", "fsx", claim.metadata.uid)
    # the controller's write is a new version of the volume
    assert int(pv.metadata.resource_version) > 0
    listed = core.list_namespaced_persistent_volume_claim("default").items
    assert [(c.metadata.name, c.status.phase) for c in listed] == [("fsx", "Bound")]


def test_a_volume_whose_claim_ref_names_the_claim_binds_when_the_claim_comes(
    admin: k8s.ApiClient,
) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_persistent_volume(_pv("pre-bound", claim_ref={"namespace": "default",
                                                              "name": "data"}))
    assert core.read_persistent_volume("pre-bound").status.phase == "Available"

    claim = core.create_namespaced_persistent_volume_claim("default", _pvc("data", storage="50Gi"))

    assert claim.status.phase == "Bound"
    assert claim.spec.volume_name == "pre-bound"
    assert claim.status.capacity == {"storage": "100Gi"}  # the volume's, not the request
    assert claim.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    pv = core.read_persistent_volume("pre-bound")
    assert pv.status.phase == "Bound"
    assert pv.spec.claim_ref.uid == claim.metadata.uid


def test_a_volume_created_after_its_claim_binds_it(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    claim = core.create_namespaced_persistent_volume_claim("default", _pvc("early", volume="late"))
    assert claim.status.phase == "Pending"

    core.create_persistent_volume(_pv("late"))

    assert core.read_namespaced_persistent_volume_claim("early", "default").status.phase == "Bound"
    assert core.read_persistent_volume("late").status.phase == "Bound"


@pytest.mark.parametrize(("volume", "claim"), [
    ({"storage_class": "fsx-sc"}, {"storage_class": ""}),
    ({"storage_class": "fsx-sc"}, {"storage_class": None}),
    ({"modes": ("ReadWriteOnce",)}, {"modes": ("ReadWriteMany",)}),
    ({"storage": "1200Gi"}, {"storage": "1.2Ti"}),
    ({"storage": "100G"}, {"storage": "100Gi"}),
])
def test_incompatible_pairs_stay_pending_and_available(
    admin: k8s.ApiClient, volume: dict[str, Any], claim: dict[str, Any]
) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_persistent_volume(_pv("pv", **volume))

    created = core.create_namespaced_persistent_volume_claim("default",
                                                             _pvc("pvc", volume="pv", **claim))

    assert created.status.phase == "Pending"
    assert created.status.capacity is None
    pv = core.read_persistent_volume("pv")
    assert pv.status.phase == "Available"
    assert pv.spec.claim_ref is None


def test_equal_storage_classes_and_a_smaller_request_bind(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_persistent_volume(_pv("pv", storage_class="fsx-sc", storage="1200Gi",
                                      modes=("ReadWriteMany", "ReadWriteOnce")))
    claim = core.create_namespaced_persistent_volume_claim(
        "default", _pvc("pvc", volume="pv", storage_class="fsx-sc", storage="1.1Ti",
                        modes=("ReadWriteOnce",)))
    assert claim.status.phase == "Bound"
    assert claim.status.access_modes == ["ReadWriteMany", "ReadWriteOnce"]


def test_an_unmatched_claim_stays_pending(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_persistent_volume(_pv("free"))
    # neither side names the other: no dynamic matching, as for a claim with no provisioner
    claim = core.create_namespaced_persistent_volume_claim("default", _pvc("loose"))
    assert claim.status.phase == "Pending"
    assert core.read_persistent_volume("free").status.phase == "Available"


def test_a_volume_bound_to_one_claim_is_not_taken_by_another(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_persistent_volume(_pv("shared"))
    first = core.create_namespaced_persistent_volume_claim("default", _pvc("a", volume="shared"))
    second = core.create_namespaced_persistent_volume_claim("default", _pvc("b", volume="shared"))
    assert (first.status.phase, second.status.phase) == ("Bound", "Pending")
    assert core.read_persistent_volume("shared").spec.claim_ref.name == "a"


def test_deleting_the_claim_releases_the_volume(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_persistent_volume(_pv("kept"))
    claim = core.create_namespaced_persistent_volume_claim("default", _pvc("gone", volume="kept"))

    core.delete_namespaced_persistent_volume_claim("gone", "default")

    pv = core.read_persistent_volume("kept")
    assert pv.status.phase == "Released"
    assert pv.spec.claim_ref.uid == claim.metadata.uid
    # a new claim of the same name is another object: the released volume does not rebind
    again = core.create_namespaced_persistent_volume_claim("default", _pvc("gone", volume="kept"))
    assert again.status.phase == "Pending"
    assert core.read_persistent_volume("kept").status.phase == "Released"


def test_deleting_the_volume_loses_the_claim(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_persistent_volume(_pv("brief"))
    core.create_namespaced_persistent_volume_claim("default", _pvc("left", volume="brief"))
    core.delete_persistent_volume("brief")
    assert core.read_namespaced_persistent_volume_claim("left", "default").status.phase == "Lost"


def test_server_side_apply_of_a_volume_and_a_claim_binds_them(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespace({"metadata": {"name": "team-a"}})
    pv_manifest = _pv("team-a-fsx", storage="1200Gi",
                      claim_ref={"namespace": "team-a", "name": "fsx-claim"})
    pvc_manifest = _pvc("fsx-claim", volume="team-a-fsx", storage="1200Gi", namespace="team-a")

    applied_pv = core.patch_persistent_volume("team-a-fsx", pv_manifest, field_manager="hypd",
                                              _content_type=APPLY)
    assert applied_pv.status.phase == "Available"
    claim = core.patch_namespaced_persistent_volume_claim(
        "fsx-claim", "team-a", pvc_manifest, field_manager="hypd", _content_type=APPLY)

    assert claim.status.phase == "Bound"
    assert claim.status.capacity == {"storage": "1200Gi"}
    pv = core.read_persistent_volume("team-a-fsx")
    assert pv.status.phase == "Bound"
    assert pv.spec.claim_ref.uid == claim.metadata.uid

    # Applying the same manifests again (the pipeline is idempotent) keeps them bound.
    again_pv = core.patch_persistent_volume("team-a-fsx", pv_manifest, field_manager="hypd",
                                            _content_type=APPLY)
    again = core.patch_namespaced_persistent_volume_claim(
        "fsx-claim", "team-a", pvc_manifest, field_manager="hypd", _content_type=APPLY)
    assert again_pv.status.phase == "Bound"
    assert again_pv.spec.claim_ref.uid == claim.metadata.uid
    assert again.status.phase == "Bound"
    assert again.metadata.resource_version == claim.metadata.resource_version


def test_updating_a_claim_keeps_its_binding(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_persistent_volume(_pv("pv"))
    claim = core.create_namespaced_persistent_volume_claim("default", _pvc("pvc", volume="pv"))
    claim.metadata.labels = {"team": "a"}
    replaced = core.replace_namespaced_persistent_volume_claim("pvc", "default", claim)
    assert replaced.status.phase == "Bound"
    assert replaced.metadata.labels == {"team": "a"}


@pytest.mark.parametrize(("text", "value"), [
    ("100Gi", 100 * 1024**3), ("1.5Ti", int(1.5 * 1024**4)), ("500M", 500 * 10**6),
    ("1e3", 1000), ("100", 100), ("250m", 0.25), (".5Ki", 512),
])
def test_quantities(text: str, value: float) -> None:
    assert parse_quantity(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "Gi", "10 Gi", "10GB", "ten"])
def test_bad_quantities(text: str) -> None:
    assert parse_quantity(text) is None
