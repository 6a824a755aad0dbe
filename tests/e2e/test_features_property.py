"""A property of the features on the local cloud: after any sequence of feature PATCHes, each
feature is as the requests that named it last asked, every enabled feature's prerequisites are
installed, and no prerequisite hypd installed is left that nothing needs."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hypd.features.catalog import FEATURES, SHARED_PREREQUISITES
from hypd_cli.api_client import ApiClient
from tests.e2e.capacity import CLUSTER, TAG, created_cluster, run

TLS_BUCKET = "hyperpod-tls-train"
BODIES = {
    "trainingOperator": {},
    "inferenceOperator": {"tlsCertificateBucket": TLS_BUCKET},
    "taskGovernance": {},
    "tieredCheckpointing": {},
}
PATCHES = st.lists(
    st.dictionaries(st.sampled_from(sorted(BODIES)), st.booleans(), min_size=1, max_size=2),
    min_size=1, max_size=3,
)


def installed(cloud: Any) -> dict[str, dict[str, str]]:
    eks = cloud.client("eks")
    return {
        name: eks.describe_addon(clusterName=CLUSTER, addonName=name)["addon"].get("tags") or {}
        for name in eks.list_addons(clusterName=CLUSTER)["addons"]
    }


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequence=PATCHES)
def test_any_sequence_of_patches_ends_as_asked_and_keeps_what_is_needed(
    api: ApiClient, cloud: Any, sequence: list[dict[str, bool]]
) -> None:
    if not api.call("listClusters")["clusters"]:
        created_cluster(api, cloud)
    desired = {name: f["enabled"] for name, f in
               api.call("getFeatures", tag=TAG)["features"].items()}
    for step in sequence:
        body = {name: ({"enabled": True, **BODIES[name]} if on else {"enabled": False})
                for name, on in step.items()}
        answer = api.call("setFeatures", tag=TAG, body=body)
        if "operationId" in answer:
            operation = run(api, cloud, answer)
            assert operation["status"] == "SUCCEEDED", (body, operation.get("error"))
        desired.update(step)
        view = api.call("getFeatures", tag=TAG)
        actual = {name: f["enabled"] for name, f in view["features"].items()}
        assert actual == desired, body
        addons = installed(cloud)
        for name, on in actual.items():
            feature = FEATURES[name]
            if on:
                assert view["features"][name]["status"] == "ACTIVE", view["features"][name]
                assert set(feature.prerequisites) <= set(addons), (name, sorted(addons))
        needed = {p for name, on in actual.items() if on for p in FEATURES[name].prerequisites}
        for prerequisite in SHARED_PREREQUISITES:
            ours = addons.get(prerequisite, {}).get("hypd:installed-by") == "features"
            assert not ours or prerequisite in needed, (prerequisite, actual)
