"""The explicit-diff contract (hypd.features.plan) and the views, on hand-made snapshots."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hypd.aws import iam as iam_api
from hypd.clusters.feature_request import FEATURE_NAMES, FeaturesRequest
from hypd.clusters.models import HYPD_TAG_KEY
from hypd.errors import ConflictError, ValidationError
from hypd.features import plan, state
from hypd.features.catalog import (
    FEATURES,
    INSTALLED_BY_FEATURES,
    INSTALLED_BY_TAG,
    SHARED_PREREQUISITES,
    role_of,
)
from hypd.features.roles import RoleContext, inline_policy, trust_policy
from hypd.features.tls_bucket import BucketFact, tls_bucket_name
from hypd_local.iam.lint import lint_document

EKS_ARN = "arn:aws:eks:us-west-2:123456789012:cluster/hypd-train"
CONTROLLERS = {f.controller: None for f in FEATURES.values() if f.controller}
CRDS = {name: None for f in FEATURES.values() for name in f.crds}


def addon(name: str, status: str = "ACTIVE", ours: bool = True, **config: Any
          ) -> state.AddonFact:
    tags = {INSTALLED_BY_TAG: INSTALLED_BY_FEATURES} if ours else {}
    return state.AddonFact(name, status, "v1.0.0-eksbuild.1", tags, config or None)


def snapshot(*addons: state.AddonFact, tiered: dict[str, Any] | None = None,
             quotas: tuple[dict[str, Any], ...] = (), pvs: frozenset[str] = frozenset()
             ) -> state.Snapshot:
    base = [addon(n, ours=False) for n in ("vpc-cni", "kube-proxy", "coredns",
                                             "eks-pod-identity-agent")]
    on = [f for f in FEATURES.values() if f.addon in {a.name for a in addons}]
    roles = {r.key: iam_api.Role(r.key, f"arn:aws:iam::123456789012:role/hypd/{r.key}", "/hypd/",
                                 {}) for f in on for r in f.roles}
    associations = {
        (i.namespace, i.service_account): state.AssociationFact(
            i.namespace, i.service_account, "a-0123456789abcdefg", roles[i.role].arn, {})
        for f in on for i in f.pod_identities
    }
    return state.Snapshot(
        tag="train", eks_name="hypd-train", eks_arn=EKS_ARN, partition="aws",
        region="us-west-2", account="123456789012",
        oidc_issuer="https://oidc.eks.us-west-2.amazonaws.com/id/ABC",
        hyperpod_name="hypd-train",
        hyperpod_arn="arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdefghijkl",
        hyperpod_status="InService", tiered=tiered,
        addons={a.name: a for a in (*base, *addons)}, associations=associations, roles=roles,
        oidc=None,
        workspace=None, scheduler=None, quotas=quotas,
        kube=state.KubeFacts(True, CRDS, CONTROLLERS, pvs),
    )


def enabled(name: str) -> list[state.AddonFact]:
    """The add-ons of feature `name` turned on, its prerequisites installed by hypd."""
    feature = FEATURES[name]
    assert feature.addon
    return [addon(p) for p in feature.prerequisites if p != "eks-pod-identity-agent"] + [
        addon(feature.addon)
    ]


def request(**body: Any) -> FeaturesRequest:
    return FeaturesRequest.model_validate(body)


def test_a_request_that_matches_reality_changes_nothing() -> None:
    snap = snapshot(*enabled("trainingOperator"))
    targets = plan.target(request(trainingOperator={"enabled": True}), snap)
    assert plan.changes(targets, snap) == {}


def test_only_named_features_are_in_the_target() -> None:
    snap = snapshot(*enabled("trainingOperator"), *enabled("taskGovernance"))
    targets = plan.target(request(inferenceOperator={"enabled": False}), snap)
    assert set(targets) == {"inferenceOperator"}
    # Nothing to change: the inference operator is already off; the others are not touched.
    assert plan.changes(targets, snap) == {}


def test_sent_settings_go_over_the_current_ones() -> None:
    snap = snapshot(tiered={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20})
    targets = plan.target(request(tieredCheckpointing={"memoryPercent": 30}), snap)
    assert targets["tieredCheckpointing"].enabled is True
    assert targets["tieredCheckpointing"].settings == {"memoryPercent": 30}
    assert plan.changes(targets, snap) == {"tieredCheckpointing": ["memoryPercent"]}


def test_a_feature_missing_what_hypd_makes_is_repaired() -> None:
    snap = snapshot(*enabled("trainingOperator"))
    for broken in (
        replace(snap, addons={k: v for k, v in snap.addons.items() if k != "cert-manager"}),
        replace(snap, roles={}),
        replace(snap, associations={}),
    ):
        targets = plan.target(request(trainingOperator={"enabled": True}), broken)
        assert plan.changes(targets, broken) == {"trainingOperator": ["repair"]}


def test_a_controller_unavailable_while_nodes_restart_is_reported_not_repaired() -> None:
    controller = FEATURES["trainingOperator"].controller
    assert controller is not None
    snap = snapshot(*enabled("trainingOperator"))
    down = replace(snap, kube=replace(snap.kube, deployments={
        **snap.kube.deployments, controller: "0/1 replicas available"}))
    targets = plan.target(request(trainingOperator={"enabled": True}), down)
    assert plan.changes(targets, down) == {}
    assert state.views(down)["features"]["trainingOperator"]["status"] == "DEGRADED"


def test_settings_for_a_feature_left_off_are_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as raised:
        plan.check(request(tieredCheckpointing={"memoryPercent": 30}), snapshot())
    assert raised.value.details["field"] == "tieredCheckpointing.memoryPercent"


def test_the_inference_operator_without_a_tls_bucket_gets_the_one_hypd_makes() -> None:
    snap = snapshot()
    ask = request(inferenceOperator={"enabled": True})
    plan.check(ask, snap)  # not refused: hypd makes the bucket
    targets = plan.target(ask, snap)
    assert targets["inferenceOperator"].settings == {}
    assert plan.changes(targets, snap) == {"inferenceOperator": ["enabled"]}
    assert snap.hypd_tls_bucket == tls_bucket_name("train", "123456789012", "us-west-2")
    assert "tls-bucket" in state.views(snap)["features"]["inferenceOperator"]["requires"]


def inference_on(bucket: str, made: bool) -> state.Snapshot:
    """The inference operator on with `bucket`; hypd's own bucket there (made) or not."""
    snap = snapshot(*enabled("inferenceOperator")[:-1], addon(
        "amazon-sagemaker-hyperpod-inference", tlsCertificateS3Bucket=bucket))
    tags = {HYPD_TAG_KEY: "train", INSTALLED_BY_TAG: INSTALLED_BY_FEATURES}
    return replace(snap, tls_bucket=BucketFact(snap.hypd_tls_bucket, tags) if made else None)


def test_the_tls_bucket_hypd_made_is_repaired_when_gone_and_a_named_one_never() -> None:
    ask = request(inferenceOperator={"enabled": True})
    hypds = inference_on(snapshot().hypd_tls_bucket, made=True)
    assert plan.changes(plan.target(ask, hypds), hypds) == {}
    gone = replace(hypds, tls_bucket=None)
    assert plan.changes(plan.target(ask, gone), gone) == {"inferenceOperator": ["repair"]}
    # Someone else's bucket of that name (its tags unreadable, or not hypd's): not hypd's.
    theirs = replace(hypds, tls_bucket=BucketFact(hypds.hypd_tls_bucket, {}, refused="denied"))
    assert plan.changes(plan.target(ask, theirs), theirs) == {"inferenceOperator": ["repair"]}
    named = inference_on("hyperpod-tls-team", made=False)
    assert plan.changes(plan.target(ask, named), named) == {}
    assert plan.target(ask, named)["inferenceOperator"].settings == {
        "tlsCertificateBucket": "hyperpod-tls-team"}


def test_a_tls_bucket_the_operators_policy_does_not_allow_is_refused() -> None:
    with pytest.raises(Exception, match="tlsCertificateBucket"):
        request(inferenceOperator={"enabled": True, "tlsCertificateBucket": "team-data"})


def test_task_governance_is_not_turned_off_under_teams() -> None:
    quota = {"Name": "hypd-train-ml", "ComputeQuotaTarget": {"TeamName": "ml"}}
    snap = snapshot(*enabled("taskGovernance"), quotas=(quota,))
    with pytest.raises(ConflictError) as raised:
        plan.check(request(taskGovernance={"enabled": False}), snap)
    assert raised.value.details["teams"] == ["ml"]


def test_views_count_who_needs_each_shared_prerequisite() -> None:
    snap = snapshot(*enabled("trainingOperator"), addon("aws-fsx-csi-driver", ours=False),
                    pvs=frozenset({"fsx.csi.aws.com"}))
    view = state.views(snap)
    assert view["features"]["trainingOperator"] | {"version": None} == {
        "enabled": True, "status": "ACTIVE", "version": None,
        "requires": ["cert-manager", "eks-pod-identity-agent"], "requiredBy": [],
    }
    prerequisites = view["prerequisites"]
    assert prerequisites["cert-manager"]["requiredBy"] == ["trainingOperator"]
    assert prerequisites["cert-manager"]["installedBy"] == "hypd"
    assert prerequisites["aws-fsx-csi-driver"] == {
        "installed": True, "status": "ACTIVE", "version": "v1.0.0-eksbuild.1",
        "installedBy": "other", "requiredBy": ["storage"],
    }
    assert view["features"]["inferenceOperator"]["enabled"] is False


# ---------------------------------------------------------------------------- property
FEATURE_ON = st.dictionaries(st.sampled_from(FEATURE_NAMES), st.booleans(), max_size=5)


@settings(max_examples=200, deadline=None)
@given(now=FEATURE_ON, sent=FEATURE_ON)
def test_a_request_never_counts_off_a_prerequisite_an_enabled_feature_needs(
    now: dict[str, bool], sent: dict[str, bool]
) -> None:
    addons = [a for name, on in now.items() if on and FEATURES[name].addon
              for a in enabled(name)]
    tiered = {"Mode": "Enable"} if now.get("tieredCheckpointing") else None
    snap = snapshot(*addons, tiered=tiered)
    body = {name: {"enabled": on} for name, on in sent.items()}
    targets = plan.target(request(**body), snap)
    after = plan.enabled_after(targets, snap)
    # Every feature on afterwards is on as the request or reality says, nothing else.
    for feature in FEATURES.values():
        expected = sent.get(feature.name, snap.enabled(feature))
        assert (feature in after) == expected
    needs = state.needed_prerequisites(snap, after)
    for feature in after:
        for prerequisite in feature.prerequisites:
            assert prerequisite in needs
    # A feature the request does not name is never in the target.
    assert set(targets) == set(sent)
    assert set(SHARED_PREREQUISITES) >= set(needs)


# ---------------------------------------------------------------------------- roles
CTX = RoleContext(
    tag="train", partition="aws", region="us-west-2", account="123456789012",
    eks_arn=EKS_ARN, boundary_arn=None,
    oidc_provider_arn="arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/"
    "id/ABC",
    workspace_arn="arn:aws:aps:us-west-2:123456789012:workspace/ws-abc",
    tls_bucket="hyperpod-tls-team",
)


@pytest.mark.parametrize("key", [r.key for f in FEATURES.values() for r in f.roles])
def test_each_feature_role_fits_the_service_authorization_reference(key: str) -> None:
    role = role_of(key)
    assert lint_document(f"{key} trust", trust_policy(role, CTX)) == []
    document = inline_policy(role, CTX)
    if document is not None:
        assert lint_document(f"{key} policy", document) == []


def test_irsa_trust_names_the_clusters_provider_and_service_accounts() -> None:
    trust = trust_policy(role_of("inference"), CTX)
    web, service = trust["Statement"]
    host = "oidc.eks.us-west-2.amazonaws.com/id/ABC"
    assert web["Principal"] == {"Federated": CTX.oidc_provider_arn}
    assert web["Condition"]["StringLike"] == {
        f"{host}:sub": "system:serviceaccount:hyperpod-inference-system:"
                       "hyperpod-inference-controller-manager"}
    assert service["Principal"] == {"Service": "sagemaker.amazonaws.com"}


def test_the_observability_trust_is_this_clusters_only() -> None:
    (statement,) = trust_policy(role_of("observability"), CTX)["Statement"]
    assert statement["Condition"]["ArnEquals"] == {"aws:SourceArn": EKS_ARN}
