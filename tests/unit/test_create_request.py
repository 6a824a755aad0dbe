"""POST /clusters body: request models (hypd.clusters.create_request) and catalogue checks
(hypd.create.validate)."""

from __future__ import annotations

import copy
import functools
import re
from datetime import UTC, datetime
from typing import Any

import botocore.loaders
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError as PydanticValidationError

from hypd.catalog.instance_types import hyperpod_instance_types
from hypd.catalog.models import InstanceTypeFacts, ReservedCapacity, TrainingPlan
from hypd.clusters.create_request import (
    DEFAULT_KUBERNETES_VERSION,
    GROUP_NAME_MAX_LENGTH,
    HYPERPOD_KUBERNETES_VERSIONS,
    INSTANCE_COUNT_MAX,
    INSTANCE_COUNT_MIN,
    INSTANCE_GROUPS_MAX,
    TAG_MAX_LENGTH,
    CapacityType,
    CreateClusterRequest,
    DeepHealthCheck,
    ResolvedCreate,
    TaintEffect,
    eks_cluster_name,
    hyperpod_cluster_name,
)
from hypd.create.validate import validate_against_catalog
from hypd.errors import ValidationError

ZONES = ["us-west-2a", "us-west-2b", "us-west-2c"]
PLAN_A = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/plan-a"
PLAN_B = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/plan-b"
PLAN_WIDE = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/plan-wide"
PLAN_OLD = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/plan-old"
PLAN_NONE = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/no-such-plan"


# ---------------------------------------------------------------------------- fixtures
@functools.cache
def sagemaker_shapes() -> dict[str, Any]:
    loader = botocore.loaders.create_loader()
    shapes: dict[str, Any] = loader.load_service_model("sagemaker", "service-2")["shapes"]
    return shapes


@functools.cache
def eks_cluster_name_shape() -> dict[str, Any]:
    model = botocore.loaders.create_loader().load_service_model("eks", "service-2")
    request = model["shapes"][model["operations"]["CreateCluster"]["input"]["shape"]]
    shape: dict[str, Any] = model["shapes"][request["members"]["name"]["shape"]]
    return shape


def group(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "gpu",
        "instanceType": "ml.g6.4xlarge",
        "count": 1,
        "capacity": {"type": "on-demand"},
    }
    body.update(overrides)
    return body


def body(**overrides: Any) -> dict[str, Any]:
    """The issue's example body, with ``overrides`` applied."""
    request: dict[str, Any] = {
        "tag": "demo",
        "availabilityZone": "us-west-2c",
        "instanceGroups": [group()],
        "storage": {"s3": {"bucket": "my-data"}},
    }
    request.update(overrides)
    return {k: v for k, v in request.items() if v is not None}


def plan(
    arn: str,
    *,
    status: str = "Active",
    capacities: tuple[tuple[str, str, int], ...] = (("ml.p5.48xlarge", "us-west-2a", 4),),
    available: int | None = 4,
) -> TrainingPlan:
    return TrainingPlan(
        name=arn.rsplit("/", 1)[1],
        arn=arn,
        status=status,
        status_message=None,
        total_instance_count=sum(c for _, _, c in capacities),
        available_instance_count=available,
        in_use_instance_count=0,
        start_time=datetime(2026, 1, 1, tzinfo=UTC),
        end_time=None,
        duration_hours=24,
        reserved_capacities=tuple(
            ReservedCapacity(t, c, z, None, "Active") for t, z, c in capacities
        ),
    )


PLANS = {
    PLAN_A: plan(PLAN_A),
    PLAN_B: plan(PLAN_B, capacities=(("ml.p5.48xlarge", "us-west-2b", 2),), available=2),
    PLAN_WIDE: plan(
        PLAN_WIDE,
        capacities=(("ml.p5.48xlarge", "us-west-2a", 2), ("ml.p5.48xlarge", "us-west-2b", 2)),
    ),
    PLAN_OLD: plan(PLAN_OLD, status="Expired"),
}
OFFERINGS = {
    "ml.g6.4xlarge": {"us-west-2b", "us-west-2c"},
    "ml.c5.large": {"us-west-2a", "us-west-2b", "us-west-2c"},
    "ml.p5.48xlarge": {"us-west-2a"},
}
FACTS = {
    "ml.g6.4xlarge": InstanceTypeFacts("g6.4xlarge", maximum_network_cards=1),
    "ml.c5.large": InstanceTypeFacts("c5.large", maximum_network_cards=1),
    "ml.p5.48xlarge": InstanceTypeFacts(
        "p5.48xlarge", maximum_network_cards=32, efa_supported=True, maximum_efa_interfaces=32
    ),
}


def resolve(request_body: dict[str, Any]) -> ResolvedCreate:
    return validate_against_catalog(
        CreateClusterRequest.model_validate(request_body),
        zones=ZONES,
        offerings=OFFERINGS,
        facts=FACTS,
        training_plans=PLANS,
    )


def field_names(exc: PydanticValidationError) -> list[str]:
    """The API's names for pydantic's error locations (`instanceGroups[1].name`)."""
    names = []
    for error in exc.errors():
        name = ""
        for part in error["loc"]:
            name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
        names.append(name)
    return names


# ---------------------------------------------------------------------------- the models
def test_the_issue_example_is_accepted_with_defaults() -> None:
    # Given the example body of issue 4
    # When it is validated
    request = CreateClusterRequest.model_validate(body())
    # Then the optional fields take their defaults and the derived names follow the tag
    assert request.availability_zone == "us-west-2c"
    assert request.instance_groups[0].capacity.type == "on-demand"
    assert request.instance_groups[0].deep_health_checks == []
    assert request.instance_groups[0].efa_only is False
    assert request.instance_groups[0].dedicated_subnet is False
    assert request.storage.s3 is not None
    assert request.storage.fsx is None
    assert (request.eks_cluster_name, request.hyperpod_cluster_name) == ("hypd-demo", "hypd-demo")


LONGEST_TAG = "t" * TAG_MAX_LENGTH
VALID_BODIES = {
    "longest tag": body(tag=LONGEST_TAG),
    "tag with inner hyphens": body(tag="a--b-1"),
    "no zone (a plan may pin it)": body(availabilityZone=None),
    "kubernetes version": body(kubernetesVersion="1.33"),
    "count 0": body(instanceGroups=[group(count=INSTANCE_COUNT_MIN)]),
    "count max": body(instanceGroups=[group(count=INSTANCE_COUNT_MAX)]),
    "longest group name": body(instanceGroups=[group(name="g" * GROUP_NAME_MAX_LENGTH)]),
    "spot": body(instanceGroups=[group(capacity={"type": "spot"})]),
    "training plan": body(
        instanceGroups=[group(capacity={"type": "training-plan", "trainingPlanArn": PLAN_A})]
    ),
    "all options": body(
        instanceGroups=[
            group(
                deepHealthChecks=["InstanceStress", "InstanceConnectivity"],
                efaOnly=True,
                dedicatedSubnet=True,
                labels={"team": "ml", "example.com/tier": "gpu_1.a"},
            ),
            group(
                name="cpu",
                taints=[
                    {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                    {"key": "nvidia.com/gpu", "value": "x", "effect": "NoExecute"},
                ],
            ),
        ]
    ),
    "s3 prefix": body(storage={"s3": {"bucket": "my.data-1", "prefix": "train/set/"}}),
    "fsx 1200": body(storage={"fsx": {"storageCapacityGiB": 1200}}),
    "fsx 4800 persistent": body(
        storage={"fsx": {"storageCapacityGiB": 4800, "deploymentType": "PERSISTENT_2"}}
    ),
}


@pytest.mark.parametrize("request_body", VALID_BODIES.values(), ids=VALID_BODIES.keys())
def test_valid_bodies_are_accepted(request_body: dict[str, Any]) -> None:
    # Given a valid body / When validated / Then no error, and it dumps back to itself
    request = CreateClusterRequest.model_validate(request_body)
    dumped = request.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    assert CreateClusterRequest.model_validate(dumped) == request


def _many_labels(n: int) -> dict[str, str]:
    return {f"k{i}": "v" for i in range(n)}


# (body, the field the error names)
INVALID_BODIES: dict[str, tuple[dict[str, Any], str]] = {
    "tag too long for hypd-{tag} as a HyperPod name": (body(tag="t" * 59), "tag"),
    "tag with underscore (HyperPod forbids it)": (body(tag="my_tag"), "tag"),
    "tag starting with a hyphen": (body(tag="-demo"), "tag"),
    "tag ending with a hyphen": (body(tag="demo-"), "tag"),
    "empty tag": (body(tag=""), "tag"),
    "zone id instead of name": (body(availabilityZone="usw2-az3"), "availabilityZone"),
    "kubernetes version with v": (body(kubernetesVersion="v1.33"), "kubernetesVersion"),
    "kubernetes version HyperPod does not support": (
        body(kubernetesVersion="1.35"),
        "kubernetesVersion",
    ),
    "unknown top-level field": (body(region="us-west-2"), "region"),
    "no groups": (body(instanceGroups=[]), "instanceGroups"),
    "too many groups": (
        body(instanceGroups=[group(name=f"g{i}") for i in range(INSTANCE_GROUPS_MAX + 1)]),
        "instanceGroups",
    ),
    "duplicate group name": (
        body(instanceGroups=[group(), group(name="cpu"), group(instanceType="ml.c5.large")]),
        "instanceGroups[2].name",
    ),
    "group name with underscore": (
        body(instanceGroups=[group(), group(name="gpu_2")]),
        "instanceGroups[1].name",
    ),
    "group name too long": (
        body(instanceGroups=[group(name="g" * (GROUP_NAME_MAX_LENGTH + 1))]),
        "instanceGroups[0].name",
    ),
    "group name ending with a hyphen": (
        body(instanceGroups=[group(name="gpu-")]),
        "instanceGroups[0].name",
    ),
    "unknown instance type": (
        body(instanceGroups=[group(), group(name="x", instanceType="ml.nope.large")]),
        "instanceGroups[1].instanceType",
    ),
    "EC2 type without ml.": (
        body(instanceGroups=[group(instanceType="g6.4xlarge")]),
        "instanceGroups[0].instanceType",
    ),
    "negative count": (body(instanceGroups=[group(count=-1)]), "instanceGroups[0].count"),
    "count above InstanceCount": (
        body(instanceGroups=[group(count=INSTANCE_COUNT_MAX + 1)]),
        "instanceGroups[0].count",
    ),
    "unknown capacity type": (
        body(instanceGroups=[group(capacity={"type": "reserved"})]),
        "instanceGroups[0].capacity",
    ),
    "training plan without ARN": (
        body(instanceGroups=[group(capacity={"type": "training-plan"})]),
        "instanceGroups[0].capacity.training-plan.trainingPlanArn",
    ),
    "training plan with a malformed ARN": (
        body(
            instanceGroups=[group(capacity={"type": "training-plan", "trainingPlanArn": "x" * 60})]
        ),
        "instanceGroups[0].capacity.training-plan.trainingPlanArn",
    ),
    "on-demand with an ARN": (
        body(instanceGroups=[group(capacity={"type": "on-demand", "trainingPlanArn": PLAN_A})]),
        "instanceGroups[0].capacity.on-demand.trainingPlanArn",
    ),
    "unknown deep health check": (
        body(instanceGroups=[group(deepHealthChecks=["InstanceStress", "Bogus"])]),
        "instanceGroups[0].deepHealthChecks[1]",
    ),
    "repeated deep health check": (
        body(instanceGroups=[group(deepHealthChecks=["InstanceStress", "InstanceStress"])]),
        "instanceGroups[0].deepHealthChecks",
    ),
    "unknown group field": (
        body(instanceGroups=[group(threadsPerCore=1)]),
        "instanceGroups[0].threadsPerCore",
    ),
    "label key with two slashes": (
        body(instanceGroups=[group(labels={"a/b/c": "x"})]),
        "instanceGroups[0].labels.a/b/c",
    ),
    "label key with uppercase prefix": (
        body(instanceGroups=[group(labels={"Example.com/x": "x"})]),
        "instanceGroups[0].labels.Example.com/x",
    ),
    "label key name too long": (
        body(instanceGroups=[group(labels={"k" * 64: "x"})]),
        "instanceGroups[0].labels." + "k" * 64,
    ),
    "label value with a space": (
        body(instanceGroups=[group(labels={"team": "ml ops"})]),
        "instanceGroups[0].labels.team",
    ),
    "empty label value (SageMaker needs 1-63)": (
        body(instanceGroups=[group(labels={"team": ""})]),
        "instanceGroups[0].labels.team",
    ),
    "too many labels": (
        body(instanceGroups=[group(labels=_many_labels(51))]),
        "instanceGroups[0].labels",
    ),
    "taint effect outside the enum": (
        body(instanceGroups=[group(taints=[{"key": "k", "effect": "NoWay"}])]),
        "instanceGroups[0].taints[0].effect",
    ),
    "taint without effect": (
        body(instanceGroups=[group(taints=[{"key": "k"}])]),
        "instanceGroups[0].taints[0].effect",
    ),
    "taint with a bad key": (
        body(instanceGroups=[group(taints=[{"key": "/k", "effect": "NoSchedule"}])]),
        "instanceGroups[0].taints[0].key",
    ),
    "taint with a bad value": (
        body(instanceGroups=[group(taints=[{"key": "k", "value": "a b", "effect": "NoSchedule"}])]),
        "instanceGroups[0].taints[0].value",
    ),
    "repeated taint key and effect": (
        body(
            instanceGroups=[
                group(
                    taints=[
                        {"key": "k", "effect": "NoSchedule"},
                        {"key": "k", "value": "v", "effect": "NoSchedule"},
                    ]
                )
            ]
        ),
        "instanceGroups[0].taints[1]",
    ),
    "taints with deep health checks": (
        body(
            instanceGroups=[
                group(),
                group(
                    name="checked",
                    deepHealthChecks=["InstanceStress"],
                    taints=[{"key": "k", "effect": "NoSchedule"}],
                ),
            ]
        ),
        "instanceGroups[1].taints",
    ),
    "no storage": (body(storage=None), "storage"),
    "both storage kinds": (
        body(storage={"s3": {"bucket": "my-data"}, "fsx": {"storageCapacityGiB": 1200}}),
        "storage",
    ),
    "neither storage kind": (body(storage={}), "storage"),
    "bucket with uppercase": (body(storage={"s3": {"bucket": "My-Data"}}), "storage.s3.bucket"),
    "bucket shaped like an IP address": (
        body(storage={"s3": {"bucket": "192.168.1.1"}}),
        "storage.s3.bucket",
    ),
    "bucket with two dots": (body(storage={"s3": {"bucket": "a..b"}}), "storage.s3.bucket"),
    "prefix without trailing slash": (
        body(storage={"s3": {"bucket": "my-data", "prefix": "train"}}),
        "storage.s3.prefix",
    ),
    "fsx capacity below 1200": (
        body(storage={"fsx": {"storageCapacityGiB": 600}}),
        "storage.fsx.storageCapacityGiB",
    ),
    "fsx capacity not a multiple of 2400": (
        body(storage={"fsx": {"storageCapacityGiB": 3600}}),
        "storage.fsx.storageCapacityGiB",
    ),
    "fsx legacy deployment type": (
        body(storage={"fsx": {"storageCapacityGiB": 1200, "deploymentType": "SCRATCH_1"}}),
        "storage.fsx.deploymentType",
    ),
}


@pytest.mark.parametrize(
    ("request_body", "field"), INVALID_BODIES.values(), ids=INVALID_BODIES.keys()
)
def test_invalid_bodies_name_the_field(request_body: dict[str, Any], field: str) -> None:
    # Given a body breaking one rule
    # When it is validated
    with pytest.raises(PydanticValidationError) as caught:
        CreateClusterRequest.model_validate(request_body)
    # Then the only error names exactly the offending field
    assert field_names(caught.value) == [field]


def test_an_unsupported_kubernetes_version_is_refused_with_the_supported_list() -> None:
    # Given a version HyperPod does not support (EKS may well offer it)
    with pytest.raises(PydanticValidationError) as caught:
        CreateClusterRequest.model_validate(body(kubernetesVersion="1.27"))
    # Then the error names the field and lists what HyperPod supports
    message = caught.value.errors()[0]["msg"]
    assert ", ".join(HYPERPOD_KUBERNETES_VERSIONS) in message
    assert "SageMaker HyperPod" in message


def test_no_kubernetes_version_resolves_to_hypds_pinned_default() -> None:
    # Given a body without kubernetesVersion / When resolved against the catalogue
    resolved = resolve(body())
    # Then the version is hypd's default, one HyperPod supports, not left to EKS
    assert resolved.kubernetes_version == DEFAULT_KUBERNETES_VERSION
    assert DEFAULT_KUBERNETES_VERSION in HYPERPOD_KUBERNETES_VERSIONS
    # And a requested version is kept
    assert resolve(body(kubernetesVersion="1.31")).kubernetes_version == "1.31"


def test_an_operation_recorded_without_a_version_gets_the_default_on_resume() -> None:
    # Given an operation input written before hypd pinned the version: stored without None
    # fields (the API writes inputs with exclude_none), so without a version, or with null
    recorded = resolve(body()).model_dump(mode="json", by_alias=True)
    absent = {k: v for k, v in recorded.items() if k != "kubernetesVersion"}
    null = {**recorded, "kubernetesVersion": None}
    # Then reading it back gives the default, so a retried eks stage pins it too
    for stored in (absent, null):
        resumed = ResolvedCreate.model_validate(stored)
        assert resumed.kubernetes_version == DEFAULT_KUBERNETES_VERSION
    # And the resolved request's own dump always carries it
    assert recorded["kubernetesVersion"] == DEFAULT_KUBERNETES_VERSION


def test_duplicate_group_names_are_all_reported() -> None:
    # Given three groups named alike
    request_body = body(instanceGroups=[group(), group(), group()])
    # When validated
    with pytest.raises(PydanticValidationError) as caught:
        CreateClusterRequest.model_validate(request_body)
    # Then each repeat is named, pointing at the first
    assert field_names(caught.value) == ["instanceGroups[1].name", "instanceGroups[2].name"]
    assert "instanceGroups[0]" in caught.value.errors()[0]["msg"]


# ---------------------------------------------------------------------------- botocore facts
def test_limits_match_the_botocore_models() -> None:
    # Given botocore's SageMaker model / Then the hand-written enums and limits agree with it
    shapes = sagemaker_shapes()
    assert [c.value for c in DeepHealthCheck] == shapes["DeepHealthCheckType"]["enum"]
    assert [e.value for e in TaintEffect] == shapes["ClusterKubernetesTaintEffect"]["enum"]
    count = shapes["ClusterInstanceCount"]
    assert (count["min"], count["max"]) == (INSTANCE_COUNT_MIN, INSTANCE_COUNT_MAX)
    assert shapes["ClusterInstanceGroupSpecifications"]["max"] == INSTANCE_GROUPS_MAX
    assert shapes["ClusterInstanceGroupName"]["max"] == GROUP_NAME_MAX_LENGTH
    assert shapes["ClusterName"]["max"] - len("hypd-") == TAG_MAX_LENGTH


def _fullmatch(shape: dict[str, Any], value: str) -> bool:
    return (
        shape.get("min", 0) <= len(value) <= shape["max"]
        and re.fullmatch(shape["pattern"], value) is not None
    )


TAGS = st.from_regex(r"\A[A-Za-z0-9]([A-Za-z0-9-]{0,56}[A-Za-z0-9])?\Z")
GROUP_NAMES = st.from_regex(r"\A[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z")
K8S_LABEL_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"


@settings(max_examples=200, deadline=None)
@given(tag=TAGS)
def test_any_valid_tag_derives_valid_cluster_names(tag: str) -> None:
    # Given any tag the model accepts
    request = CreateClusterRequest.model_validate(body(tag=tag))
    # Then hypd-{tag} is a valid HyperPod ClusterName and EKS cluster name
    assert _fullmatch(sagemaker_shapes()["ClusterName"], hyperpod_cluster_name(request.tag))
    assert _fullmatch(eks_cluster_name_shape(), eks_cluster_name(request.tag))


@settings(max_examples=200, deadline=None)
@given(name=GROUP_NAMES)
def test_any_valid_group_name_is_a_sagemaker_name_and_a_label_value(name: str) -> None:
    # Given any group name the model accepts
    request = CreateClusterRequest.model_validate(body(instanceGroups=[group(name=name)]))
    accepted = request.instance_groups[0].name
    # Then it is a SageMaker InstanceGroupName and a Kubernetes label value
    assert _fullmatch(sagemaker_shapes()["ClusterInstanceGroupName"], accepted)
    assert len(accepted) <= 63
    assert re.fullmatch(K8S_LABEL_VALUE, accepted)


# ---------------------------------------------------------------------------- round trip
_DNS = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?\Z")
LABEL_KEYS = st.builds(
    lambda prefix, name: f"{prefix}/{name}" if prefix else name,
    st.one_of(st.none(), st.lists(_DNS, min_size=1, max_size=3).map(".".join)),
    st.from_regex(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?\Z"),
)
LABEL_VALUES = st.from_regex(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?\Z")
CAPACITIES = st.one_of(
    st.just({"type": "on-demand"}),
    st.just({"type": "spot"}),
    st.builds(
        lambda n: {
            "type": "training-plan",
            "trainingPlanArn": f"arn:aws:sagemaker:us-west-2:123456789012:training-plan/{n}",
        },
        st.from_regex(r"\A[a-z0-9-]{1,20}\Z"),
    ),
)


@st.composite
def groups(draw: st.DrawFn, name: str) -> dict[str, Any]:
    checks = draw(st.lists(st.sampled_from([c.value for c in DeepHealthCheck]), unique=True))
    item: dict[str, Any] = {
        "name": name,
        "instanceType": draw(st.sampled_from(hyperpod_instance_types())),
        "count": draw(st.integers(INSTANCE_COUNT_MIN, INSTANCE_COUNT_MAX)),
        "capacity": draw(CAPACITIES),
    }
    if checks:
        item["deepHealthChecks"] = checks
    # Defaults (False) are left out, as a client would; True is sent.
    if draw(st.booleans()):
        item["efaOnly"] = True
    if draw(st.booleans()):
        item["dedicatedSubnet"] = True
    labels = draw(st.dictionaries(LABEL_KEYS, LABEL_VALUES, max_size=4))
    if labels:
        item["labels"] = labels
    if not checks:
        taints = draw(
            st.lists(
                st.fixed_dictionaries(
                    {"key": LABEL_KEYS, "effect": st.sampled_from([e.value for e in TaintEffect])},
                    optional={"value": LABEL_VALUES},
                ),
                max_size=3,
                unique_by=lambda t: (t["key"], t["effect"]),
            )
        )
        if taints:
            item["taints"] = taints
    return item


@st.composite
def create_bodies(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(GROUP_NAMES, min_size=1, max_size=4, unique=True))
    storage = draw(
        st.one_of(
            st.fixed_dictionaries(
                {"bucket": st.from_regex(r"\A[a-z0-9][a-z0-9-]{1,20}[a-z0-9]\Z")},
                optional={"prefix": st.from_regex(r"\A[a-z0-9]{1,8}(/[a-z0-9]{1,8}){0,2}/\Z")},
            ).map(lambda s3: {"s3": s3}),
            st.fixed_dictionaries(
                {"storageCapacityGiB": st.sampled_from([1200, 2400, 4800, 9600, 240000])},
                optional={"deploymentType": st.sampled_from(["SCRATCH_2", "PERSISTENT_2"])},
            ).map(lambda fsx: {"fsx": fsx}),
        )
    )
    request: dict[str, Any] = {
        "tag": draw(TAGS),
        "instanceGroups": [draw(groups(name)) for name in names],
        "storage": storage,
    }
    if draw(st.booleans()):
        request["availabilityZone"] = draw(st.sampled_from(ZONES))
    if draw(st.booleans()):
        request["kubernetesVersion"] = draw(st.sampled_from(["1.31", "1.32", "1.33"]))
    return request


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request_body=create_bodies())
def test_valid_requests_round_trip_unchanged(request_body: dict[str, Any]) -> None:
    # Given any valid generated body
    request = CreateClusterRequest.model_validate(request_body)
    # When it is dumped in the API's camelCase and validated again
    for mode in ("python", "json"):
        dumped = request.model_dump(mode=mode, by_alias=True)
        again = CreateClusterRequest.model_validate(dumped)
        # Then nothing changed
        assert again == request
        assert again.model_dump(mode=mode, by_alias=True) == dumped
    # And the compact form (defaults left out) is exactly what was sent
    assert request.model_dump(mode="json", by_alias=True, exclude_defaults=True) == request_body


# ---------------------------------------------------------------------------- catalogue checks
def tp(arn: str) -> dict[str, str]:
    return {"type": "training-plan", "trainingPlanArn": arn}


# (body, [(field, a phrase its message contains)])
CATALOG_PROBLEMS: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {
    "unknown zone": (
        body(availabilityZone="us-west-2d"),
        [("availabilityZone", "us-west-2a, us-west-2b, us-west-2c")],
    ),
    "zone does not offer the type": (
        body(
            availabilityZone="us-west-2a",
            instanceGroups=[group(name="cpu", instanceType="ml.c5.large"), group()],
        ),
        [("instanceGroups[1].instanceType", "zones that offer it: us-west-2b, us-west-2c")],
    ),
    "no zone offers the type": (
        body(instanceGroups=[group(instanceType="ml.t3.medium")]),
        [("instanceGroups[0].instanceType", "no zone of this Region offers it")],
    ),
    "no zone and no training plan": (
        body(availabilityZone=None),
        [("availabilityZone", "required unless a group uses a training plan")],
    ),
    "unknown training plan": (
        body(instanceGroups=[group(instanceType="ml.p5.48xlarge", capacity=tp(PLAN_NONE))]),
        [("instanceGroups[0].capacity.trainingPlanArn", "no training plan")],
    ),
    "expired training plan": (
        body(instanceGroups=[group(instanceType="ml.p5.48xlarge", capacity=tp(PLAN_OLD))]),
        [("instanceGroups[0].capacity.trainingPlanArn", "is Expired")],
    ),
    "training plan in another zone than the request's": (
        body(
            availabilityZone="us-west-2c",
            instanceGroups=[group(instanceType="ml.p5.48xlarge", capacity=tp(PLAN_A))],
        ),
        [("instanceGroups[0].capacity.trainingPlanArn", "us-west-2a, not in the request's")],
    ),
    "training plan of another instance type": (
        body(
            availabilityZone=None,
            instanceGroups=[group(instanceType="ml.g6.4xlarge", capacity=tp(PLAN_A))],
        ),
        [("instanceGroups[0].instanceType", "reserves ml.p5.48xlarge, not ml.g6.4xlarge")],
    ),
    "count above the plan's available instances": (
        body(
            availabilityZone=None,
            instanceGroups=[group(instanceType="ml.p5.48xlarge", count=5, capacity=tp(PLAN_A))],
        ),
        [("instanceGroups[0].count", "has 4 instances available; this group asks for 5")],
    ),
    "groups sharing a plan ask for more than it has": (
        body(
            availabilityZone=None,
            instanceGroups=[
                group(name="a", instanceType="ml.p5.48xlarge", count=3, capacity=tp(PLAN_A)),
                group(name="b", instanceType="ml.p5.48xlarge", count=2, capacity=tp(PLAN_A)),
            ],
        ),
        [
            ("instanceGroups[0].count", "ask for 5 together"),
            ("instanceGroups[1].count", "ask for 5 together"),
        ],
    ),
    "two groups on plans in different zones": (
        body(
            availabilityZone=None,
            instanceGroups=[
                group(name="a", instanceType="ml.p5.48xlarge", capacity=tp(PLAN_A)),
                group(name="b", instanceType="ml.p5.48xlarge", capacity=tp(PLAN_B)),
            ],
        ),
        [("instanceGroups[1].capacity.trainingPlanArn", "instanceGroups[0] is in us-west-2a")],
    ),
    "plan over several zones and no zone given": (
        body(
            availabilityZone=None,
            instanceGroups=[group(instanceType="ml.p5.48xlarge", capacity=tp(PLAN_WIDE))],
        ),
        [("instanceGroups[0].capacity.trainingPlanArn", "give availabilityZone")],
    ),
    "EFA-only on a type with one network card": (
        body(instanceGroups=[group(efaOnly=True)]),
        [("instanceGroups[0].efaOnly", "1 network card(s) and does not support EFA")],
    ),
    "EFA-only on a type without facts": (
        body(instanceGroups=[group(instanceType="ml.g5.xlarge", efaOnly=True)]),
        [
            ("instanceGroups[0].instanceType", "no zone of this Region offers it"),
            ("instanceGroups[0].efaOnly", "unknown"),
        ],
    ),
    "on-demand group not offered in the plan's zone": (
        body(
            availabilityZone=None,
            instanceGroups=[
                group(name="a", instanceType="ml.p5.48xlarge", capacity=tp(PLAN_A)),
                group(name="b", instanceType="ml.g6.4xlarge"),
            ],
        ),
        [("instanceGroups[1].instanceType", "not offered in us-west-2a")],
    ),
    "every problem at once": (
        body(
            availabilityZone="us-west-2d",
            instanceGroups=[
                group(name="a", instanceType="ml.p5.48xlarge", capacity=tp(PLAN_NONE)),
                group(name="b", instanceType="ml.g6.4xlarge", capacity=tp(PLAN_OLD)),
                group(name="c", efaOnly=True),
            ],
        ),
        [
            ("availabilityZone", "not an available Availability Zone"),
            ("instanceGroups[0].capacity.trainingPlanArn", "no training plan"),
            ("instanceGroups[1].capacity.trainingPlanArn", "is Expired"),
            ("instanceGroups[2].efaOnly", "EFA-only"),
        ],
    ),
}


@pytest.mark.parametrize(
    ("request_body", "expected"), CATALOG_PROBLEMS.values(), ids=CATALOG_PROBLEMS.keys()
)
def test_catalog_problems_name_each_field(
    request_body: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    # Given a well-formed body the catalogue cannot serve
    # When it is checked against the catalogue
    with pytest.raises(ValidationError) as caught:
        resolve(request_body)
    # Then one ValidationError lists every problem with its exact field, like the API's 400
    details = caught.value.details
    assert [(e["field"], e["in"]) for e in details["errors"]] == [(f, "body") for f, _ in expected]
    for error, (_, phrase) in zip(details["errors"], expected, strict=True):
        assert phrase in error["message"]
    assert details["field"] == expected[0][0]
    assert caught.value.status == 400
    assert caught.value.message.startswith(f"invalid request: {expected[0][0]}: ")


def test_zone_is_taken_from_the_training_plan() -> None:
    # Given no zone, a plan group and an on-demand group offered in the plan's zone
    request_body = body(
        availabilityZone=None,
        instanceGroups=[
            group(name="train", instanceType="ml.p5.48xlarge", count=4, capacity=tp(PLAN_A)),
            group(name="cpu", instanceType="ml.c5.large", capacity={"type": "spot"}),
        ],
    )
    # When resolved
    resolved = resolve(request_body)
    # Then the zone is the plan's, and each group knows its capacity
    assert (resolved.availability_zone, resolved.availability_zone_source) == (
        "us-west-2a",
        "training-plan",
    )
    train, cpu = resolved.instance_groups
    assert train.resolved_capacity.type is CapacityType.TRAINING_PLAN
    assert train.resolved_capacity.training_plan_arn == PLAN_A
    assert train.resolved_capacity.training_plan_name == "plan-a"
    assert train.resolved_capacity.training_plan_status == "Active"
    assert train.resolved_capacity.availability_zone == "us-west-2a"
    assert cpu.resolved_capacity.type is CapacityType.SPOT
    assert cpu.resolved_capacity.training_plan_arn is None
    assert (resolved.eks_cluster_name, resolved.hyperpod_cluster_name) == ("hypd-demo",) * 2


def test_a_plan_spanning_zones_fits_an_explicit_zone() -> None:
    # Given a plan with capacity in two zones and a request naming one of them
    request_body = body(
        availabilityZone="us-west-2b",
        instanceGroups=[group(instanceType="ml.p5.48xlarge", efaOnly=True, capacity=tp(PLAN_WIDE))],
    )
    # When resolved / Then the request's zone stands (EFA-only is fine on p5)
    resolved = resolve(request_body)
    assert (resolved.availability_zone, resolved.availability_zone_source) == (
        "us-west-2b",
        "request",
    )
    assert resolved.instance_groups[0].efa_only is True


def test_resolved_create_keeps_every_request_field() -> None:
    # Given the issue's example with every optional group field set
    request_body = body(
        kubernetesVersion="1.33",
        instanceGroups=[
            group(
                deepHealthChecks=["InstanceStress"],
                dedicatedSubnet=True,
                labels={"team": "ml"},
            )
        ],
    )
    # When resolved
    resolved = resolve(request_body)
    # Then the groups carry the request's fields unchanged, and the result round-trips as JSON
    request = CreateClusterRequest.model_validate(request_body)
    group_fields = request.instance_groups[0].model_dump()
    assert resolved.instance_groups[0].model_dump(exclude={"resolved_capacity"}) == group_fields
    assert resolved.instance_groups[0].resolved_capacity.type is CapacityType.ON_DEMAND
    assert resolved.kubernetes_version == "1.33"
    assert resolved.storage == request.storage
    as_json = resolved.model_dump(mode="json", by_alias=True)
    assert ResolvedCreate.model_validate(as_json) == resolved
    assert as_json["instanceGroups"][0]["resolvedCapacity"] == {
        "type": "on-demand",
        "availabilityZone": "us-west-2c",
        "trainingPlanArn": None,
        "trainingPlanName": None,
        "trainingPlanStatus": None,
    }


def test_catalog_check_does_not_change_the_request() -> None:
    # Given a request / When it is checked / Then the caller's object is untouched
    request = CreateClusterRequest.model_validate(
        body(
            availabilityZone=None,
            instanceGroups=[group(instanceType="ml.p5.48xlarge", capacity=tp(PLAN_A))],
        )
    )
    before = copy.deepcopy(request)
    validate_against_catalog(
        request, zones=ZONES, offerings=OFFERINGS, facts=FACTS, training_plans=PLANS
    )
    assert request == before
    assert request.availability_zone is None
