"""One idempotent step of each phase toward the features a request names (docs/features.md).

Every call reads the snapshot again and does what is still missing, so a retry, a redelivery or
a crash in the middle resumes where things are; it answers whether the phase is done and when to
look again. A failure is `FeatureStepFailed`, naming the feature, the step and AWS's message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypd.aws import amp as amp_api
from hypd.aws import eks as eks_api
from hypd.aws import iam as iam_api
from hypd.aws import s3 as s3_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.clusters.feature_request import FeaturesRequest
from hypd.clusters.models import HYPD_TAG_KEY
from hypd.create import addons as addons_mod
from hypd.create.control_plane import read_eks_cluster
from hypd.features import plan, state
from hypd.features.catalog import (
    FEATURES,
    INSTALLED_BY_FEATURES,
    INSTALLED_BY_TAG,
    SHARED_PREREQUISITES,
    TRAINING_OPERATOR_MIN_GOVERNANCE,
    Feature,
    role_arn,
    role_of,
    workspace_alias,
)
from hypd.features.progress import CHECK_SECONDS, Progress, failed, step
from hypd.features.roles import RoleContext, ensure_role, remove_role
from hypd.features.state import FeatureClients, Snapshot

PHASES = ("prerequisites", "addons", "verify", "cleanup")
DELETE_CHECK_SECONDS = 30
"""An add-on's or a scheduler config's deletion takes about half a minute."""
HYPERPOD_UPDATE_FIRST_LOOK_SECONDS = 120
HYPERPOD_UPDATE_CHECK_SECONDS = 30
"""UpdateCluster's TieredStorageConfig takes minutes (the cluster is Updating meanwhile)."""
VERIFY_GIVE_UP_SECONDS = 15 * 60
"""A controller not available this long after its add-on is ACTIVE fails the verify stage."""


@dataclass
class Reconciler:
    clients: FeatureClients
    tag: str
    request: FeaturesRequest
    token: str
    """The operation's id: client tokens of what it creates."""
    boundary_arn: str | None = None
    csi_roles: dict[str, str] = field(default_factory=dict)
    """Add-on -> the role of its pod identity (the CSI drivers: the deployment's roles)."""
    eks_name: str | None = None
    hyperpod_name: str | None = None
    grant_access: Callable[[str], None] | None = None
    """Give this function (and the API's reader) their access entries on an EKS cluster, by
    name: called when its Kubernetes API is not readable (a cluster made before features)."""

    # ------------------------------------------------------------------ shared
    def snapshot(self) -> Snapshot:
        return state.read(self.clients, self.tag, self.eks_name, self.hyperpod_name)

    def _tags(self) -> dict[str, str]:
        return {HYPD_TAG_KEY: self.tag, INSTALLED_BY_TAG: INSTALLED_BY_FEATURES}

    def _role_arn(self, snap: Snapshot, key: str) -> str:
        return role_arn(snap.partition, snap.account, self.tag, role_of(key))

    def _bucket(self, snap: Snapshot, targets: dict[str, plan.FeatureTarget]) -> str | None:
        """The inference operator's TLS bucket once it is on: the one named (sent, or the
        add-on's now), else the one hypd makes for the cluster; None while it is to be off."""
        wanted = targets.get("inferenceOperator")
        if wanted is None or not wanted.enabled:
            return None
        return str(wanted.settings.get("tlsCertificateBucket") or snap.hypd_tls_bucket)

    def _workspace_arn(self, snap: Snapshot, targets: dict[str, plan.FeatureTarget]) -> str | None:
        wanted = targets.get("observability")
        given = wanted.settings.get("ampWorkspaceArn") if wanted else None
        if given:
            return str(given)
        return str(snap.workspace["arn"]) if snap.workspace else None

    def _role_context(self, snap: Snapshot, targets: dict[str, plan.FeatureTarget]) -> RoleContext:
        oidc_arn = (
            iam_api.oidc_provider_arn(snap.partition, snap.account, snap.oidc_issuer)
            if snap.oidc_issuer else None
        )
        return RoleContext(
            tag=self.tag, partition=snap.partition, region=snap.region,
            account=snap.account, eks_arn=snap.eks_arn,
            boundary_arn=self.boundary_arn, oidc_provider_arn=oidc_arn,
            workspace_arn=self._workspace_arn(snap, targets),
            tls_bucket=self._bucket(snap, targets),
        )

    def advance(
        self, phase: str, waited_seconds: float = 0.0, snap: Snapshot | None = None
    ) -> Progress:
        """One step of `phase`, on `snap` (read now when None). A request naming no feature
        has nothing to do and reads nothing."""
        if not self.request.named():
            return Progress(True)
        snap = snap or self.snapshot()
        targets = plan.target(self.request, snap)
        if phase == "prerequisites":
            return self._prerequisites(snap, targets)
        if phase == "addons":
            return self._addons(snap, targets)
        if phase == "verify":
            return self._verify(snap, targets, waited_seconds)
        if phase == "cleanup":
            return self._cleanup(snap, targets)
        raise ValueError(f"unknown phase {phase!r}")

    def advance_all(self, waited_seconds: float = 0.0) -> tuple[str, Progress]:
        """Every phase in order, up to the first that is not done (the create's one stage)."""
        actions: list[str] = []
        snap = None
        for phase in PHASES:
            if snap is None and self.request.named():
                snap = self.snapshot()
            progress = self.advance(phase, waited_seconds, snap)
            actions += progress.actions
            if not progress.done:
                return phase, Progress(False, actions, progress.wait_seconds)
            if progress.actions:
                snap = None  # the phase changed something: read again for the next
        return PHASES[-1], Progress(True, actions)

    # ------------------------------------------------------------------ prerequisites
    def _prerequisites(self, snap: Snapshot, targets: dict[str, plan.FeatureTarget]) -> Progress:
        if not snap.kube.reachable and self.grant_access is not None:
            with step(",".join(targets) or "features", "kubernetes access"):
                self.grant_access(snap.eks_name)
            return Progress(False, ["grant Kubernetes access"], 1)
        on = [t.feature for t in targets.values() if t.enabled]
        if not on:
            return Progress(True)
        eks, iam = self.clients.client("eks"), self.clients.client("iam")
        actions: list[str] = []
        needed = list(dict.fromkeys(p for f in on for p in f.prerequisites))
        names = ", ".join(f.name for f in on)
        with step(names, "prerequisite add-ons"):
            progress = addons_mod.advance_addons(
                eks, snap.eks_name, addons_mod.plan_addons(None, extras=needed),
                pod_identity_roles=self.csi_roles, client_token=f"{self.token}-f",
                awaiting_nodes=True, tags=self._tags(),
            )
        actions += [f"create add-on {n}" for n in progress.created]
        done = progress.done
        wait = progress.next_check_seconds
        if any(f.oidc for f in on) and snap.oidc is None:
            if not snap.oidc_issuer:
                raise failed("inferenceOperator", "oidc-provider",
                             f"EKS cluster {snap.eks_name} reports no OIDC issuer")
            with step("inferenceOperator", "oidc-provider"):
                iam_api.create_oidc_provider(iam, snap.oidc_issuer, self._tags())
            actions.append("create OIDC provider")
        if self._bucket(snap, targets) == snap.hypd_tls_bucket and not snap.tls_bucket_made:
            actions.append(self._make_tls_bucket(snap))
        observability = targets.get("observability")
        if observability and observability.enabled and not observability.settings.get(
            "ampWorkspaceArn"
        ):
            with step("observability", "amp-workspace"):
                if snap.workspace is None:
                    amp_api.create_workspace(
                        self.clients.client("amp"), workspace_alias(self.tag),
                        {"SageMaker": "true", **self._tags()}, f"{self.token}-amp",
                    )
                    actions.append("create AMP workspace")
                    return Progress(False, actions)  # its ARN is read on the next look
                status = str((snap.workspace.get("status") or {}).get("statusCode"))
                if status in ("CREATION_FAILED",):
                    raise failed("observability", "amp-workspace",
                                 f"workspace {snap.workspace.get('workspaceId')} is {status}")
                if status != "ACTIVE":
                    done, wait = False, min(wait, DELETE_CHECK_SECONDS)
        ctx = self._role_context(snap, targets)
        role_arns: dict[str, str] = {}
        for feature in on:
            for role in feature.roles:
                with step(feature.name, f"role {role.key}"):
                    arn, changed = ensure_role(iam, role, ctx)
                role_arns[role.key] = arn
                actions += [f"role {role.key}: {c}" for c in changed]
        for feature in on:
            for identity in feature.pod_identities:
                key = (identity.namespace, identity.service_account)
                existing = snap.associations.get(key)
                arn = role_arns[identity.role]
                with step(feature.name, "pod identity association"):
                    if existing is None:
                        eks_api.create_pod_identity_association(eks, {
                            "clusterName": snap.eks_name, "namespace": identity.namespace,
                            "serviceAccount": identity.service_account, "roleArn": arn,
                            "tags": self._tags(),
                            "clientRequestToken": f"{self.token}-{identity.role}"[:64],
                        })
                        actions.append(f"associate {'/'.join(key)}")
                    elif existing.role_arn != arn:
                        eks_api.update_pod_identity_association(
                            eks, snap.eks_name, existing.association_id, arn)
                        actions.append(f"re-associate {'/'.join(key)}")
        return Progress(done, actions, wait)

    def _make_tls_bucket(self, snap: Snapshot) -> str:
        """The cluster's TLS bucket, made private, encrypted and tagged (idempotent: a
        bucket of the name this account already owns is finished, not made again)."""
        name = snap.hypd_tls_bucket
        with step("inferenceOperator", "tls-bucket"):
            try:
                s3_api.make_private_bucket(self.clients.client("s3"), name, snap.region,
                                           self._tags())
            except s3_api.BucketNameTaken as exc:
                raise failed(
                    "inferenceOperator", "tls-bucket",
                    f"{exc}: hypd names cluster {self.tag}'s TLS bucket {name}; name a bucket "
                    "of this account with inferenceOperator.tlsCertificateBucket "
                    "(hyperpod-tls...)", **exc.details) from exc
        return f"create TLS bucket {name}"

    # ------------------------------------------------------------------ add-ons
    def _configuration(self, feature: Feature, snap: Snapshot,
                       targets: dict[str, plan.FeatureTarget]) -> dict[str, Any] | None:
        settings = targets[feature.name].settings
        if feature.name == "inferenceOperator":
            keda = self._role_arn(snap, "inference-keda")
            return {
                "executionRoleArn": self._role_arn(snap, "inference"),
                "tlsCertificateS3Bucket": self._bucket(snap, targets),
                "hyperpodClusterArn": snap.hyperpod_arn,
                "jumpstartGatedModelDownloadRoleArn": self._role_arn(snap, "inference-gated"),
                "alb": {"enabled": True,
                        "serviceAccount": {"create": True,
                                           "roleArn": self._role_arn(snap, "inference-alb")}},
                "keda": {"enabled": True,
                         "auth": {"aws": {"irsa": {"enabled": True, "roleArn": keda}}}},
            }
        if feature.name == "observability":
            arn = self._workspace_arn(snap, targets)
            endpoint = str((snap.workspace or {}).get("prometheusEndpoint") or "")
            if not endpoint and arn:
                endpoint = (f"https://aps-workspaces.{snap.region}.amazonaws.com/workspaces/"
                            f"{arn.rsplit('/', 1)[-1]}")
            config: dict[str, Any] = {
                "ampWorkspace": {"prometheusEndpoint": endpoint.rstrip("/"), "arn": arn},
            }
            metrics = settings.get("metrics") or {}
            if metrics:
                config["metricsProvider"] = {
                    state.OBSERVABILITY_PROVIDERS[k]: {"level": v} for k, v in metrics.items()
                }
            if "logging" in settings:
                config["logging"] = {"enabled": bool(settings["logging"])}
            return config
        return None

    def _addons(self, snap: Snapshot, targets: dict[str, plan.FeatureTarget]) -> Progress:
        eks = self.clients.client("eks")
        actions: list[str] = []
        done = True
        for name, wanted in targets.items():
            feature = wanted.feature
            if feature.addon is None:
                with step(name, "tiered storage"):
                    settled, did = self._tiered(snap, wanted)
                done, actions = done and settled, actions + did
                continue
            fact = snap.addons.get(feature.addon)
            if name == "taskGovernance" and not wanted.enabled and fact is not None:
                with step(name, "scheduler config"):
                    if snap.scheduler is not None:
                        self._delete_scheduler(snap)
                        actions.append("delete scheduler config")
                        done = False
                        continue
            with step(name, "add-on"):
                if wanted.enabled:
                    settled, did = self._enable_addon(eks, feature, fact, snap, targets)
                elif fact is None:
                    settled, did = True, []
                else:
                    if fact.status != "DELETING":
                        eks_api.delete_addon(eks, snap.eks_name, feature.addon)
                    settled, did = False, [f"delete add-on {feature.addon}"]
            done, actions = done and settled, actions + did
            if name == "taskGovernance" and wanted.enabled and settled:
                with step(name, "scheduler config"):
                    settled, did = self._scheduler(snap, wanted)
                done, actions = done and settled, actions + did
        return Progress(done, actions, self._addons_wait(snap, actions))

    @staticmethod
    def _addons_wait(snap: Snapshot, actions: list[str]) -> int:
        """When to look again: the soonest that anything started or seen on its way can be
        done (a new add-on near its expected minute, HyperPod's update after minutes)."""
        waits: list[int] = []
        if any(a.startswith("create add-on") for a in actions):
            waits.append(addons_mod.ADDON_EXPECTED_SECONDS)
        if any(a.startswith("UpdateCluster") for a in actions):
            waits.append(HYPERPOD_UPDATE_FIRST_LOOK_SECONDS)
        elif snap.hyperpod_status == "Updating":
            waits.append(HYPERPOD_UPDATE_CHECK_SECONDS)
        if any(a.startswith("delete") for a in actions) or any(
            f.status == "DELETING" for f in snap.addons.values()
        ):
            waits.append(DELETE_CHECK_SECONDS)
        if any(f.status in ("CREATING", "UPDATING") for f in snap.addons.values()):
            waits.append(CHECK_SECONDS)
        return min(waits) if waits else CHECK_SECONDS

    def _enable_addon(self, eks: Any, feature: Feature, fact: state.AddonFact | None,
                      snap: Snapshot, targets: dict[str, plan.FeatureTarget]
                      ) -> tuple[bool, list[str]]:
        assert feature.addon is not None
        config = self._configuration(feature, snap, targets)
        if fact is None:
            if feature.name == "trainingOperator":
                self._check_governance_version(snap)
            kubernetes = read_eks_cluster(eks, snap.eks_name).version or ""
            version = eks_api.default_addon_version(eks, feature.addon, kubernetes)
            if version is None:
                raise failed(feature.name, "add-on",
                             f"EKS offers no version of {feature.addon} for Kubernetes "
                             f"{kubernetes}")
            params: dict[str, Any] = {
                "clusterName": snap.eks_name, "addonName": feature.addon,
                "addonVersion": version, "resolveConflicts": "OVERWRITE",
                "tags": self._tags(), "clientRequestToken": f"{self.token}-{feature.name}"[:64],
            }
            if config is not None:
                params["configurationValues"] = json.dumps(config, sort_keys=True)
            eks_api.create_addon(eks, params)
            return False, [f"create add-on {feature.addon} {version}"]
        if fact.status in ("CREATING", "UPDATING", "DELETING"):
            return False, []
        if fact.status.endswith("_FAILED"):
            issues = "; ".join(f"{i.get('code')}: {i.get('message')}" for i in fact.issues)
            if fact.status == "CREATE_FAILED":
                # Removed now, so that the operation's retry installs it afresh.
                eks_api.delete_addon(eks, snap.eks_name, feature.addon)
            raise failed(feature.name, "add-on",
                         f"add-on {feature.addon} is {fact.status}: {issues or 'no issue given'}",
                         awsErrorCode=fact.status, healthIssues=[dict(i) for i in fact.issues])
        if config is not None and dict(fact.configuration or {}) != config:
            eks_api.update_addon(eks, {
                "clusterName": snap.eks_name, "addonName": feature.addon,
                "configurationValues": json.dumps(config, sort_keys=True),
                "resolveConflicts": "OVERWRITE",
            })
            return False, [f"update add-on {feature.addon} configuration"]
        return fact.status in ("ACTIVE", "DEGRADED"), []

    def _check_governance_version(self, snap: Snapshot) -> None:
        governance = snap.addon(FEATURES["taskGovernance"].addon)
        if governance is None or not governance.version:
            return
        numbers = tuple(int(x) for x in governance.version.lstrip("v").split("-")[0].split("."))
        if numbers < TRAINING_OPERATOR_MIN_GOVERNANCE:
            raise failed("trainingOperator", "add-on",
                         f"task governance {governance.version} is installed; the training "
                         "operator needs v1.3.0-eksbuild.1 or later: update task governance "
                         "first")

    def _tiered(self, snap: Snapshot, wanted: plan.FeatureTarget) -> tuple[bool, list[str]]:
        desired: dict[str, Any] = {"Mode": "Enable" if wanted.enabled else "Disable"}
        if wanted.enabled and wanted.settings.get("memoryPercent") is not None:
            desired["InstanceMemoryAllocationPercentage"] = wanted.settings["memoryPercent"]
        current = dict(snap.tiered or {"Mode": "Disable"})
        matches = current.get("Mode") == desired["Mode"] and all(
            current.get(k) == v for k, v in desired.items()
        )
        if snap.hyperpod_status != "InService":
            return False, []
        if matches:
            return True, []
        sagemaker_api.update_cluster(self.clients.client("sagemaker"), {
            "ClusterName": snap.hyperpod_name, "TieredStorageConfig": desired,
        })
        return False, [f"UpdateCluster TieredStorageConfig {desired['Mode']}"]

    def _scheduler_config(self, wanted: plan.FeatureTarget) -> dict[str, Any] | None:
        s = wanted.settings
        if not any(k in s for k in ("priorityClasses", "fairShare", "idleResourceSharing")):
            return None
        config: dict[str, Any] = {
            "PriorityClasses": [
                {"Name": c["name"], "Weight": c["weight"]} for c in s.get("priorityClasses") or []
            ],
        }
        if "fairShare" in s:
            config["FairShare"] = "Enabled" if s["fairShare"] else "Disabled"
        if "idleResourceSharing" in s:
            config["IdleResourceSharing"] = "Enabled" if s["idleResourceSharing"] else "Disabled"
        return config

    def _scheduler(self, snap: Snapshot, wanted: plan.FeatureTarget) -> tuple[bool, list[str]]:
        config = self._scheduler_config(wanted)
        if config is None or snap.hyperpod_arn is None:
            return True, []
        sagemaker = self.clients.client("sagemaker")
        current = snap.scheduler
        if current is None:
            sagemaker_api.governance_call(
                sagemaker, "create_cluster_scheduler_config",
                f"creating the scheduler config of {snap.hyperpod_name}",
                Name=f"hypd-{self.tag}"[:63], ClusterArn=snap.hyperpod_arn,
                SchedulerConfig=config, Tags=[{"Key": HYPD_TAG_KEY, "Value": self.tag}],
            )
            return False, ["create scheduler config"]
        status = str(current.get("Status"))
        if status == "CreateFailed":
            # Created before the add-on was ready: delete it; the next look creates it again.
            self._delete_scheduler(snap)
            return False, ["delete failed scheduler config"]
        if status.endswith("Failed"):
            raise failed("taskGovernance", "scheduler config",
                         f"scheduler config is {status}: {current.get('FailureReason')}")
        if status not in ("Created", "Updated"):
            return False, []
        if dict(current.get("SchedulerConfig") or {}) != config:
            sagemaker_api.governance_call(
                sagemaker, "update_cluster_scheduler_config",
                f"updating the scheduler config of {snap.hyperpod_name}",
                ClusterSchedulerConfigId=current["ClusterSchedulerConfigId"],
                TargetVersion=current["ClusterSchedulerConfigVersion"],
                SchedulerConfig=config,
            )
            return False, ["update scheduler config"]
        return True, []

    def _delete_scheduler(self, snap: Snapshot) -> None:
        assert snap.scheduler is not None
        if snap.scheduler.get("Status") == "Deleting":
            return
        sagemaker_api.governance_call(
            self.clients.client("sagemaker"), "delete_cluster_scheduler_config",
            f"deleting the scheduler config of {snap.hyperpod_name}",
            ClusterSchedulerConfigId=snap.scheduler["ClusterSchedulerConfigId"],
        )

    # ------------------------------------------------------------------ verify
    def _verify(self, snap: Snapshot, targets: dict[str, plan.FeatureTarget],
                waited_seconds: float) -> Progress:
        pending: dict[str, list[str]] = {}
        for name, wanted in targets.items():
            feature = wanted.feature
            status, problems = state.feature_status(snap, feature)
            if wanted.enabled:
                addon = snap.addon(feature.addon)
                real_issues = [i for i in (addon.issues if addon else ())
                               if str(i.get("code")) not in addons_mod.NODE_ISSUES]
                if real_issues or status == "FAILED":
                    raise failed(name, "verify", "; ".join(problems),
                                 awsErrorCode=str(real_issues[0].get("code"))
                                 if real_issues else status)
                if feature.addon is None:
                    percent = wanted.settings.get("memoryPercent")
                    tiered = snap.tiered or {}
                    if tiered.get("Mode") != "Enable" or (
                        percent is not None
                        and tiered.get("InstanceMemoryAllocationPercentage") != percent
                    ):
                        problems = [f"DescribeCluster reports TieredStorageConfig {tiered}"]
                if problems:
                    pending[name] = problems
            elif snap.enabled(feature) or status == "DELETING":
                pending[name] = [f"{feature.title} is still {status}"]
        if not pending:
            return Progress(True)
        if waited_seconds >= VERIFY_GIVE_UP_SECONDS:
            name, problems = next(iter(pending.items()))
            raise failed(name, "verify",
                         f"after {int(waited_seconds)} s: " + "; ".join(problems),
                         pending=pending)
        return Progress(False, [f"{n}: {'; '.join(p)}" for n, p in pending.items()])

    # ------------------------------------------------------------------ cleanup
    def _cleanup(self, snap: Snapshot, targets: dict[str, plan.FeatureTarget]) -> Progress:
        eks, iam = self.clients.client("eks"), self.clients.client("iam")
        actions: list[str] = []
        done = True
        off = [t.feature for t in targets.values() if not t.enabled]
        for feature in off:
            for identity in feature.pod_identities:
                existing = snap.associations.get((identity.namespace, identity.service_account))
                if existing is not None and existing.tags.get(INSTALLED_BY_TAG):
                    with step(feature.name, "pod identity association"):
                        eks_api.delete_pod_identity_association(
                            eks, snap.eks_name, existing.association_id)
                    actions.append(f"remove association {identity.namespace}/"
                                   f"{identity.service_account}")
            for role in feature.roles:
                if snap.roles.get(role.key) is not None:
                    with step(feature.name, f"role {role.key}"):
                        remove_role(iam, self.tag, role)
                    actions.append(f"delete role {role.key}")
            if feature.amp_workspace and snap.workspace is not None and (
                (snap.workspace.get("tags") or {}).get(INSTALLED_BY_TAG)
            ):
                with step(feature.name, "amp-workspace"):
                    amp_api.delete_workspace(self.clients.client("amp"),
                                             str(snap.workspace["workspaceId"]))
                actions.append("delete AMP workspace")
        after = plan.enabled_after(targets, snap)
        if not any(f.tls_bucket for f in after) and snap.tls_bucket_made:
            # Only once the operator is off: certificates of its endpoints may be in it.
            with step("inferenceOperator", "tls-bucket"):
                s3_api.empty_and_delete_bucket(self.clients.client("s3"), snap.hypd_tls_bucket)
            actions.append(f"delete TLS bucket {snap.hypd_tls_bucket}")
        if not any(f.oidc for f in after) and snap.oidc is not None and snap.oidc.tags.get(
            INSTALLED_BY_TAG
        ):
            with step("inferenceOperator", "oidc-provider"):
                iam_api.delete_oidc_provider(iam, snap.oidc.arn)
            actions.append("delete OIDC provider")
        needs = state.needed_prerequisites(snap, after)
        for name in SHARED_PREREQUISITES:
            fact = snap.addons.get(name)
            if fact is None or not fact.ours or name in needs:
                continue
            done = False
            if fact.status != "DELETING":
                with step(",".join(f.name for f in off) or "features", f"remove {name}"):
                    eks_api.delete_addon(eks, snap.eks_name, name)
                actions.append(f"delete add-on {name}")
        return Progress(done, actions, DELETE_CHECK_SECONDS)
