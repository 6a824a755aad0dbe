"""The normaliser against HyperPod's semantics: a scale of one group, sent through UpdateCluster,
leaves every other member of every group as DescribeCluster showed it.

The HyperPod emulator behaves as the service does where it matters here: a group UpdateCluster
lists is replaced by the spec sent, so a member left out of a resubmitted group is reset
(OnStartDeepHealthChecks, KubernetesConfig, InstanceStorageConfigs, ScheduledUpdateConfig, ...).
Hypothesis generates clusters of arbitrary valid groups; the one builder of every hypd update
(`update_request`) scales one of them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hypd.instance_groups.update import update_request
from tests.emulator.test_hyperpod_support import cluster_request, group, make

TYPES = ("ml.g5.8xlarge", "ml.g5.12xlarge", "ml.p4d.24xlarge")
CHECKS = ("InstanceStress", "InstanceConnectivity")
_NAME = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
_VALUE = st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True)


@st.composite
def groups(draw: st.DrawFn) -> list[dict[str, Any]]:
    names = draw(st.lists(_NAME, min_size=1, max_size=4, unique=True))
    out: list[dict[str, Any]] = []
    for name in names:
        itype = draw(st.sampled_from(TYPES))
        extra: dict[str, Any] = {}
        checks = draw(st.lists(st.sampled_from(CHECKS), unique=True, max_size=2))
        if checks:
            extra["OnStartDeepHealthChecks"] = checks
        kubernetes: dict[str, Any] = {}
        labels = draw(st.dictionaries(_NAME, _VALUE, max_size=3))
        if labels:
            kubernetes["Labels"] = labels
        if not checks and draw(st.booleans()):  # no custom taints with deep health checks
            kubernetes["Taints"] = [{"Key": draw(_NAME), "Value": draw(_VALUE),
                                     "Effect": draw(st.sampled_from(["NoSchedule",
                                                                     "NoExecute"]))}]
        if kubernetes:
            extra["KubernetesConfig"] = kubernetes
        if draw(st.booleans()):
            extra["InstanceStorageConfigs"] = [
                {"EbsVolumeConfig": {"VolumeSizeInGB": draw(st.integers(1, 16384))}}
            ]
        if draw(st.booleans()):
            extra["ThreadsPerCore"] = draw(st.sampled_from([1, 2]))
        if draw(st.booleans()):
            extra["CapacityRequirements"] = draw(st.sampled_from([{"Spot": {}},
                                                                  {"OnDemand": {}}]))
        if itype == "ml.p4d.24xlarge" and draw(st.booleans()):
            extra["NetworkInterface"] = {"InterfaceType": "efa-only"}
        if draw(st.booleans()):
            extra["ScheduledUpdateConfig"] = {"ScheduleExpression": "cron(0 3 ? * SUN *)"}
        out.append(group(name, draw(st.integers(0, 2)), itype, **extra))
    return out


def _described(api: Any) -> dict[str, dict[str, Any]]:
    return {g["InstanceGroupName"]: g for g in api.describe_cluster(ClusterName="hp1")
            ["InstanceGroups"]}


def _carried(details: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in details.items()
            if k not in ("TargetCount", "CurrentCount", "Status", "ActiveOperations")}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=groups(), data=st.data())
def test_a_scale_through_update_cluster_changes_the_count_of_one_group_only(
    specs: list[dict[str, Any]], data: st.DataObject
) -> None:
    _emulator, api, clock, _events = make()
    api.create_cluster(**cluster_request(groups=specs, NodeProvisioningMode="Continuous"))
    clock.advance(hours=2)
    before = _described(api)
    target = data.draw(st.sampled_from(sorted(before)))
    count = data.draw(st.integers(0, 3))

    described = api.describe_cluster(ClusterName="hp1")
    api.update_cluster(**update_request(described, changes={target: {"InstanceCount": count}}))
    clock.t += timedelta(hours=2)

    after = _described(api)
    assert after[target]["TargetCount"] == count
    assert {n: _carried(g) for n, g in after.items()} == {
        n: _carried(g) for n, g in before.items()
    }
