"""hypd.instance_groups.normalise: the one DescribeCluster -> UpdateCluster group normaliser.

The installed botocore sagemaker model is the reference: the allowlist must account for every
member of both shapes, generated groups are built from the details shape, and every output is
checked against the spec shape by a small walker.
"""

from __future__ import annotations

import copy
import datetime as dt
import string
from collections.abc import Mapping
from typing import Any

import botocore.session
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hypd.errors import NotFoundError, PermanentError, ValidationError
from hypd.instance_groups import (
    DROPPED_DETAILS_MEMBERS,
    DROPPED_SPEC_MEMBERS,
    FIXED_MEMBERS,
    MUTABLE_MEMBERS,
    RESUBMITTED_MEMBERS,
    changed_groups,
    resubmittable_group,
)
from hypd.instance_groups.normalise import (
    AUTO_PATCH_CONFIG_MEMBERS,
    INSTANCE_REQUIREMENTS_MEMBERS,
    KUBERNETES_CONFIG_MEMBERS,
)

MODEL = botocore.session.get_session().get_service_model("sagemaker")
SPEC = MODEL.shape_for("ClusterInstanceGroupSpecification")
DETAILS = MODEL.shape_for("ClusterInstanceGroupDetails")

# Spec member -> details member it is copied from unchanged. Written out here, independently of
# the module's allowlist, so the property test does not check the allowlist against itself.
VERBATIM = {
    "InstanceGroupName": "InstanceGroupName",
    "InstanceCount": "TargetCount",
    "MinInstanceCount": "MinCount",
    "LifeCycleConfig": "LifeCycleConfig",
    "ExecutionRole": "ExecutionRole",
    "ThreadsPerCore": "ThreadsPerCore",
    "InstanceStorageConfigs": "InstanceStorageConfigs",
    "OnStartDeepHealthChecks": "OnStartDeepHealthChecks",
    "TrainingPlanArn": "TrainingPlanArn",
    "OverrideVpcConfig": "OverrideVpcConfig",
    "ScheduledUpdateConfig": "ScheduledUpdateConfig",
    "SlurmConfig": "SlurmConfig",
    "CapacityRequirements": "CapacityRequirements",
    "NetworkInterface": "NetworkInterface",
}


# ---------------------------------------------------------------------------- model walkers
def shape_errors(value: Any, shape: Any, path: str = "$") -> list[str]:
    """Why `value` is not a valid instance of the botocore `shape` (empty when it is)."""
    kind = shape.type_name
    meta = shape.metadata
    if kind == "structure":
        if not isinstance(value, dict):
            return [f"{path}: not a structure"]
        errors = [f"{path}.{k}: unknown member" for k in value if k not in shape.members]
        errors += [f"{path}.{k}: required" for k in shape.required_members if k not in value]
        for key, item in value.items():
            if key in shape.members:
                errors += shape_errors(item, shape.members[key], f"{path}.{key}")
        return errors
    if kind == "list":
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        errors = _length_errors(len(value), meta, path)
        for index, item in enumerate(value):
            errors += shape_errors(item, shape.member, f"{path}[{index}]")
        return errors
    if kind == "map":
        if not isinstance(value, dict):
            return [f"{path}: not a map"]
        errors = _length_errors(len(value), meta, path)
        for key, item in value.items():
            errors += shape_errors(key, shape.key, f"{path}<key>")
            errors += shape_errors(item, shape.value, f"{path}[{key!r}]")
        return errors
    if kind == "string":
        if not isinstance(value, str):
            return [f"{path}: not a string"]
        if meta.get("enum") and value not in meta["enum"]:
            return [f"{path}: {value!r} not in enum"]
        return _length_errors(len(value), meta, path)
    if kind in ("integer", "long"):
        if isinstance(value, bool) or not isinstance(value, int):
            return [f"{path}: not an integer"]
        return _length_errors(value, meta, path)
    if kind == "boolean":
        return [] if isinstance(value, bool) else [f"{path}: not a boolean"]
    if kind == "timestamp":
        return [] if isinstance(value, dt.datetime) else [f"{path}: not a timestamp"]
    return [f"{path}: unhandled shape type {kind}"]


def _length_errors(size: int, meta: Mapping[str, Any], path: str) -> list[str]:
    if "min" in meta and size < meta["min"]:
        return [f"{path}: {size} below min {meta['min']}"]
    if "max" in meta and size > meta["max"]:
        return [f"{path}: {size} above max {meta['max']}"]
    return []


def spec_errors(group: Mapping[str, Any]) -> list[str]:
    errors = shape_errors(dict(group), SPEC)
    if "InstanceType" in group and "InstanceRequirements" in group:
        errors.append("$: InstanceType and InstanceRequirements are mutually exclusive")
    return errors


def assignable(source: Any, target: Any) -> bool:
    """Every value valid for `source` (details side) is valid for `target` (spec side)."""
    if source.type_name != target.type_name:
        return False
    if source.type_name == "structure":
        return set(target.required_members) <= set(source.required_members) and all(
            name in target.members and assignable(member, target.members[name])
            for name, member in source.members.items()
        )
    if source.type_name == "list":
        return assignable(source.member, target.member)
    if source.type_name == "map":
        return assignable(source.key, target.key) and assignable(source.value, target.value)
    return set(source.metadata.get("enum", [])) <= set(target.metadata.get("enum", []))


# ---------------------------------------------------------------------------- strategies
_ALPHABET = string.ascii_letters + string.digits + "-"
_TIMESTAMPS = st.datetimes(
    min_value=dt.datetime(2024, 1, 1), max_value=dt.datetime(2030, 1, 1), timezones=st.just(dt.UTC)
)


def strategy_for(shape: Any) -> st.SearchStrategy[Any]:
    """Valid values of a botocore shape: enums, required members, lengths and ranges respected."""
    kind = shape.type_name
    meta = shape.metadata
    low = meta.get("min", 0)
    high = meta.get("max")
    if kind == "structure":
        return st.fixed_dictionaries(
            {name: strategy_for(shape.members[name]) for name in shape.required_members},
            optional={
                name: strategy_for(member)
                for name, member in shape.members.items()
                if name not in shape.required_members
            },
        )
    if kind == "list":
        return st.lists(strategy_for(shape.member), min_size=low, max_size=min(high or 3, low + 3))
    if kind == "map":
        return st.dictionaries(
            strategy_for(shape.key),
            strategy_for(shape.value),
            min_size=low,
            max_size=min(high or 3, low + 3),
        )
    if kind == "string":
        if meta.get("enum"):
            return st.sampled_from(meta["enum"])
        return st.text(_ALPHABET, min_size=low, max_size=min(high or low + 12, low + 12))
    if kind in ("integer", "long"):
        return st.integers(min_value=meta.get("min"), max_value=meta.get("max"))
    if kind == "boolean":
        return st.booleans()
    if kind == "timestamp":
        return _TIMESTAMPS
    raise AssertionError(f"no strategy for {kind}")


# DescribeCluster always returns these for a real group (the details shape marks none required).
_ALWAYS_DESCRIBED = ("InstanceGroupName", "TargetCount", "ExecutionRole")


def described_group() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {name: strategy_for(DETAILS.members[name]) for name in _ALWAYS_DESCRIBED},
        optional={
            name: strategy_for(member)
            for name, member in DETAILS.members.items()
            if name not in _ALWAYS_DESCRIBED
        },
    )


def described_groups() -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(
        described_group(), min_size=1, max_size=4, unique_by=lambda g: g["InstanceGroupName"]
    )


# ---------------------------------------------------------------------------- fixtures
ROLE = "arn:aws:iam::111122223333:role/hypd-nodes"
PLAN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/plan-0123456789abcdef"


def worker_details(**overrides: Any) -> dict[str, Any]:
    """A described group as DescribeCluster returns it, mid scale-out (2 of 4 up)."""
    details: dict[str, Any] = {
        "CurrentCount": 2,
        "TargetCount": 4,
        "MinCount": 1,
        "InstanceGroupName": "workers",
        "InstanceType": "ml.p5.48xlarge",
        "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-lcc/", "OnCreate": "on_create.sh"},
        "ExecutionRole": ROLE,
        "ThreadsPerCore": 1,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
        "OnStartDeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
        "Status": "Updating",
        "TrainingPlanArn": PLAN,
        "TrainingPlanStatus": "Active",
        "OverrideVpcConfig": {"SecurityGroupIds": ["sg-0123"], "Subnets": ["subnet-0abc"]},
        "ScheduledUpdateConfig": {"ScheduleExpression": "cron(0 3 ? * SUN *)"},
        "CurrentImageId": "ami-0aaaaaaa",
        "DesiredImageId": "ami-0bbbbbbb",
        "CurrentImageReleaseVersion": "1.2.3",
        "DesiredImageReleaseVersion": "1.2.4",
        "ImageVersionStatus": "UpdateAvailable",
        "ActiveOperations": {"Scaling": 1},
        "KubernetesConfig": {
            "CurrentLabels": {"team": "old"},
            "DesiredLabels": {"team": "ml"},
            "CurrentTaints": [],
            "DesiredTaints": [{"Key": "gpu", "Value": "true", "Effect": "NoSchedule"}],
        },
        "CapacityRequirements": {"OnDemand": {}},
        "TargetStateCount": 2,
        "SoftwareUpdateStatus": "InProgress",
        "NetworkInterface": {"InterfaceType": "efa-only"},
    }
    details.update(overrides)
    return details


def cluster(*groups: dict[str, Any]) -> dict[str, Any]:
    return {"ClusterName": "demo", "ClusterStatus": "InService", "InstanceGroups": list(groups)}


# ---------------------------------------------------------------------------- allowlist vs model
def test_every_spec_member_is_resubmitted_or_deliberately_dropped() -> None:
    allowed, dropped = set(RESUBMITTED_MEMBERS), set(DROPPED_SPEC_MEMBERS)
    assert not allowed & dropped
    undecided = set(SPEC.members) - allowed - dropped
    assert not undecided, f"decide: resubmit or drop {sorted(undecided)}"
    assert not (allowed | dropped) - set(SPEC.members), "members the model no longer has"


def test_every_details_member_is_read_or_deliberately_dropped() -> None:
    read = {source for rule in RESUBMITTED_MEMBERS.values() for source in rule.sources}
    dropped = set(DROPPED_DETAILS_MEMBERS)
    assert not read & dropped
    undecided = set(DETAILS.members) - read - dropped
    assert not undecided, f"decide: read or drop {sorted(undecided)}"
    assert not (read | dropped) - set(DETAILS.members)


@pytest.mark.parametrize(("spec_member", "details_member"), sorted(VERBATIM.items()))
def test_verbatim_members_have_a_spec_compatible_shape(
    spec_member: str, details_member: str
) -> None:
    assert RESUBMITTED_MEMBERS[spec_member].sources == (details_member,)
    assert assignable(DETAILS.members[details_member], SPEC.members[spec_member])


@pytest.mark.parametrize(
    ("member", "mapping"),
    [
        ("InstanceRequirements", INSTANCE_REQUIREMENTS_MEMBERS),
        ("KubernetesConfig", KUBERNETES_CONFIG_MEMBERS),
        ("AutoPatchConfig", AUTO_PATCH_CONFIG_MEMBERS),
    ],
)
def test_nested_mappings_cover_both_shapes(
    member: str, mapping: Mapping[str, tuple[str, ...]]
) -> None:
    spec_shape, details_shape = SPEC.members[member], DETAILS.members[member]
    assert set(mapping) == set(spec_shape.members)
    assert {source for sources in mapping.values() for source in sources} == set(
        details_shape.members
    )
    for spec_name, sources in mapping.items():
        for source in sources:
            assert assignable(details_shape.members[source], spec_shape.members[spec_name])


def test_every_spec_member_is_either_mutable_or_fixed() -> None:
    assert not MUTABLE_MEMBERS & set(FIXED_MEMBERS)
    assert MUTABLE_MEMBERS | set(FIXED_MEMBERS) == set(SPEC.members)


# ---------------------------------------------------------------------------- resubmittable_group
def test_a_described_group_becomes_a_valid_spec() -> None:
    spec = resubmittable_group(worker_details())
    assert spec_errors(spec) == []
    assert spec == {
        "InstanceGroupName": "workers",
        "InstanceCount": 4,
        "MinInstanceCount": 1,
        "InstanceType": "ml.p5.48xlarge",
        "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-lcc/", "OnCreate": "on_create.sh"},
        "ExecutionRole": ROLE,
        "ThreadsPerCore": 1,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
        "OnStartDeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
        "TrainingPlanArn": PLAN,
        "OverrideVpcConfig": {"SecurityGroupIds": ["sg-0123"], "Subnets": ["subnet-0abc"]},
        "ScheduledUpdateConfig": {"ScheduleExpression": "cron(0 3 ? * SUN *)"},
        "ImageId": "ami-0bbbbbbb",
        "ImageReleaseVersion": "1.2.4",
        "KubernetesConfig": {
            "Labels": {"team": "ml"},
            "Taints": [{"Key": "gpu", "Value": "true", "Effect": "NoSchedule"}],
        },
        "CapacityRequirements": {"OnDemand": {}},
        "NetworkInterface": {"InterfaceType": "efa-only"},
    }


NEXT = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
LATER = dt.datetime(2026, 4, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("overrides", "member", "expected"),
    [
        # a scale in progress is kept: TargetCount, not CurrentCount
        ({"CurrentCount": 9, "TargetCount": 3}, "InstanceCount", 3),
        # images: desired wins, current is the fallback
        ({"DesiredImageId": None}, "ImageId", "ami-0aaaaaaa"),
        ({"CurrentImageId": None, "DesiredImageId": None}, "ImageId", None),
        ({"DesiredImageReleaseVersion": None}, "ImageReleaseVersion", "1.2.3"),
        # labels and taints: desired wins; an empty desired set is kept, not replaced by current
        (
            {"KubernetesConfig": {"CurrentLabels": {"a": "1"}, "DesiredLabels": {}}},
            "KubernetesConfig",
            {"Labels": {}},
        ),
        (
            {"KubernetesConfig": {"CurrentLabels": {"a": "1"}}},
            "KubernetesConfig",
            {"Labels": {"a": "1"}},
        ),
        ({"KubernetesConfig": {}}, "KubernetesConfig", None),
        # flexible group: desired types, and no InstanceType beside them
        (
            {
                "InstanceRequirements": {
                    "CurrentInstanceTypes": ["ml.g5.xlarge"],
                    "DesiredInstanceTypes": ["ml.g5.xlarge", "ml.g6.xlarge"],
                }
            },
            "InstanceRequirements",
            {"InstanceTypes": ["ml.g5.xlarge", "ml.g6.xlarge"]},
        ),
        (
            {"InstanceRequirements": {"CurrentInstanceTypes": ["ml.g5.xlarge"]}},
            "InstanceType",
            None,
        ),
        ({"InstanceRequirements": {}}, "InstanceType", "ml.p5.48xlarge"),
        ({"InstanceRequirements": {}}, "InstanceRequirements", None),
        # auto patching: desired schedule, the rest as is; none without a strategy
        (
            {
                "AutoPatchConfig": {
                    "PatchingStrategy": "DrainFirst",
                    "CurrentPatchSchedule": {"NextPatchDate": NEXT},
                    "DesiredPatchSchedule": {"NextPatchDate": LATER},
                    "DrainPolicy": {"DrainTimeoutInSeconds": 600, "OnDrainTimeout": "Skip"},
                }
            },
            "AutoPatchConfig",
            {
                "PatchingStrategy": "DrainFirst",
                "PatchSchedule": {"NextPatchDate": LATER},
                "DrainPolicy": {"DrainTimeoutInSeconds": 600, "OnDrainTimeout": "Skip"},
            },
        ),
        (
            {"AutoPatchConfig": {"CurrentPatchSchedule": {"NextPatchDate": NEXT}}},
            "AutoPatchConfig",
            None,
        ),
        # carried fields an unrelated scale must never reset
        ({"CapacityRequirements": {"Spot": {}}}, "CapacityRequirements", {"Spot": {}}),
        (
            {"NetworkInterface": {"InterfaceType": "efa"}},
            "NetworkInterface",
            {"InterfaceType": "efa"},
        ),
        ({"SlurmConfig": {"NodeType": "Compute"}}, "SlurmConfig", {"NodeType": "Compute"}),
        ({"MinCount": None}, "MinInstanceCount", None),
    ],
)
def test_derivation(overrides: dict[str, Any], member: str, expected: Any) -> None:
    details = {k: v for k, v in worker_details(**overrides).items() if v is not None}
    spec = resubmittable_group(details)
    assert spec.get(member) == expected
    assert spec_errors(spec) == []


@pytest.mark.parametrize(
    "member",
    [
        "CurrentCount",
        "Status",
        "TrainingPlanStatus",
        "ActiveOperations",
        "ImageVersionStatus",
        "TargetStateCount",
        "SoftwareUpdateStatus",
        "CurrentImageId",
        "DesiredImageId",
    ],
)
def test_read_only_members_are_not_sent(member: str) -> None:
    assert member not in resubmittable_group(worker_details())


@pytest.mark.parametrize("member", ["InstanceGroupName", "TargetCount", "ExecutionRole"])
def test_a_group_without_a_required_member_cannot_be_resubmitted(member: str) -> None:
    details = worker_details()
    del details[member]
    with pytest.raises(PermanentError):
        resubmittable_group(details)


def test_the_spec_shares_nothing_with_the_details() -> None:
    details = worker_details()
    spec = resubmittable_group(details)
    spec["KubernetesConfig"]["Labels"]["team"] = "changed"
    spec["InstanceStorageConfigs"].append({})
    assert details == worker_details()


# ---------------------------------------------------------------------------- changed_groups
def test_scaling_one_group_resubmits_that_group_alone_and_changes_only_its_count() -> None:
    other = worker_details(InstanceGroupName="system", InstanceType="ml.m5.xlarge", TargetCount=2)
    described = cluster(worker_details(), other)
    snapshot = copy.deepcopy(described)

    groups = changed_groups(described, {"workers": {"InstanceCount": 8}})

    assert groups == [{**resubmittable_group(worker_details()), "InstanceCount": 8}]
    assert described == snapshot


def test_no_changes_resubmit_nothing() -> None:
    assert changed_groups(cluster(worker_details()), {}) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"MinInstanceCount": 0}, {"MinInstanceCount": 0}),
        ({"InstanceCount": 0}, {"InstanceCount": 0}),
        ({"MinInstanceCount": None}, {}),
        (
            {"KubernetesConfig": {"Labels": {"team": "infra"}}},
            {"KubernetesConfig": {"Labels": {"team": "infra"}}},
        ),
        (
            {"LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-new/", "OnCreate": "go.sh"}},
            {"LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-new/", "OnCreate": "go.sh"}},
        ),
        # restating a fixed member's current value is not a change
        ({"InstanceType": "ml.p5.48xlarge", "InstanceCount": 5}, {"InstanceCount": 5}),
    ],
)
def test_mutable_changes(change: dict[str, Any], expected: dict[str, Any]) -> None:
    [group] = changed_groups(cluster(worker_details()), {"workers": change})
    before = resubmittable_group(worker_details())
    assert {k: v for k, v in group.items() if before.get(k) != v} == {
        k: v for k, v in expected.items() if v is not None
    }
    assert set(before) - set(group) == {k for k, v in change.items() if v is None}
    assert spec_errors(group) == []


@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("InstanceType", "ml.g5.xlarge"),
        ("ExecutionRole", "arn:aws:iam::111122223333:role/other-role"),
        ("ThreadsPerCore", 2),
        ("CapacityRequirements", {"Spot": {}}),
        ("NetworkInterface", {"InterfaceType": "efa"}),
        ("TrainingPlanArn", PLAN + "x"),
    ],
)
def test_a_change_to_a_create_time_member_is_refused(member: str, value: Any) -> None:
    with pytest.raises(ValidationError) as raised:
        changed_groups(cluster(worker_details()), {"workers": {"InstanceCount": 5, member: value}})
    assert member in raised.value.message
    assert "fixed at creation" in raised.value.message
    assert raised.value.details == {"instanceGroup": "workers", "field": member}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"ImageId": "ami-0ccccccc"}, "ImageId"),
        ({"InstanceGroupName": "renamed"}, "InstanceGroupName"),
        ({"CurrentCount": 3}, "CurrentCount"),
        ({"InstanceCount": -1}, "InstanceCount"),
        ({"InstanceCount": 6759}, "InstanceCount"),
        ({"InstanceCount": True}, "InstanceCount"),
        ({"InstanceCount": "4"}, "InstanceCount"),
        ({"InstanceCount": None}, "InstanceCount"),
        ({"MinInstanceCount": 2.5}, "MinInstanceCount"),
        ({"InstanceRequirements": {"InstanceTypes": ["ml.g5.xlarge"]}}, "InstanceRequirements"),
    ],
)
def test_invalid_changes_are_refused(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        changed_groups(cluster(worker_details()), {"workers": change})
    assert field in raised.value.message
    assert raised.value.details["field"] == field


def test_a_group_the_cluster_lacks_is_not_found() -> None:
    with pytest.raises(NotFoundError, match="ghost"):
        changed_groups(cluster(worker_details()), {"ghost": {"InstanceCount": 1}})


# ---------------------------------------------------------------------------- property
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(groups=described_groups(), data=st.data())
def test_scaling_one_group_leaves_every_other_field_of_every_group_unchanged(
    groups: list[dict[str, Any]], data: st.DataObject
) -> None:
    target = data.draw(st.sampled_from([g["InstanceGroupName"] for g in groups]))
    count = data.draw(strategy_for(SPEC.members["InstanceCount"]))
    described = cluster(*groups)
    snapshot = copy.deepcopy(described)

    out = changed_groups(described, {target: {"InstanceCount": count}})

    assert described == snapshot  # the input is never mutated
    # only the scaled group is resubmitted: UpdateCluster leaves unlisted groups as they are
    [group] = out
    details = next(g for g in groups if g["InstanceGroupName"] == target)
    assert group["InstanceGroupName"] == target
    assert spec_errors(group) == []
    # through the allowlist: every member is what the described group implies
    for member, rule in RESUBMITTED_MEMBERS.items():
        if member == "InstanceCount":
            assert group["InstanceCount"] == count
        else:
            assert group.get(member) == rule.derive(details), member
    # and independently of it: carried members equal the described values
    for member, source in VERBATIM.items():
        if member != "InstanceCount":
            assert group.get(member) == details.get(source), member
    assert set(group) <= set(RESUBMITTED_MEMBERS)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(details=described_group())
def test_every_valid_described_group_normalises_to_a_valid_spec(details: dict[str, Any]) -> None:
    assert spec_errors(resubmittable_group(details)) == []
