"""The delete-cluster stages that work inside the cluster or on what the features made:
workloads, governance, addons, roles (docs/teardown.md). They run on FeatureTasksFunction,
which holds the cluster-admin access entry and already deletes add-ons, pod identity
associations, quotas and feature roles when a feature is turned off. `hypd.teardown.tasks`
has the other stages.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypd.aws import amp as amp_api
from hypd.aws import eks as eks_api
from hypd.aws import iam as iam_api
from hypd.aws import s3 as s3_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.features.tasks import FeatureServices
from hypd.features.tls_bucket import BucketFact
from hypd.kubernetes.apply import KubernetesAccessDenied, delete_object, list_objects
from hypd.tasks import TaskRouter
from hypd.teardown import finders
from hypd.teardown.inputs import TeardownInput
from hypd.teardown.inventory import endpoint_resource
from hypd.teardown.plan import Resource, distinct
from hypd.teardown.stages import Look, TeardownFailed, stage_task
from hypd.workloads import views
from hypd.workloads.cluster import list_kinds
from hypd.workloads.manifests import ENDPOINT_KINDS, JOB_POD_LABEL, KINDS, TRAINING_JOB

router = TaskRouter()


def workloads(services: FeatureServices, where: TeardownInput,
              known: Sequence[Resource], start: bool) -> Look:
    """Every job and inference object, deleted in the foreground while the nodes and the
    operators are up (their finalizers stop the pods and remove the SageMaker endpoints);
    done once the objects, the jobs' pods and the endpoints are gone."""
    cluster = eks_api.find_cluster(services.client("eks"), where.eks_name)
    if cluster is None:
        return Look()
    if cluster.get("status") in eks_api.NEVER_ACTIVE:
        # EKS gives a cluster its endpoint only once it is up: no Kubernetes API, no workloads.
        return Look(skipped=f"EKS cluster {where.eks_name} never became ACTIVE (it is "
                            f"{cluster.get('status')}): it has no Kubernetes API to run "
                            "workloads on")
    api = services.clients.kubernetes(where.eks_name)
    try:
        objects = list_kinds(api, [TRAINING_JOB, *ENDPOINT_KINDS])
    except KubernetesAccessDenied:
        if not start:
            raise
        # A cluster made before this function had its access entry: it grants itself one,
        # as a feature change does, and looks again (an entry takes a moment to apply).
        services.grant_access(where.eks_name)
        return Look(waiting=[Resource("EksAccessEntry", "FeatureTasksFunction")],
                    reason="Kubernetes access granted; looking again")
    left: list[Resource] = []
    endpoints = [r for r in known if r.type == "SageMakerEndpoint"]
    for obj in objects:
        meta, kind = obj["metadata"], KINDS[str(obj["kind"])]
        if not meta.get("deletionTimestamp"):
            delete_object(api, kind.api_version, kind.kind, str(meta["name"]),
                          str(meta["namespace"]), propagation="Foreground")
        left.append(Resource(kind.kind, str(meta["name"]),
                             detail={"namespace": meta.get("namespace")}))
        if kind.kind != TRAINING_JOB.kind:
            endpoint = endpoint_resource(views.endpoint_view(obj).get("sageMaker"))
            if endpoint is not None:
                endpoints.append(endpoint)
    # An endpoint outlives its object when the operator could not delete it
    # (aws/sagemaker-hyperpod-cli#284): it is waited for, then named when the budget ends.
    sagemaker = services.client("sagemaker")
    endpoints = distinct(endpoints)
    left += [r for r in endpoints if sagemaker_api.find_endpoint(sagemaker, r.name) is not None]
    pods = list_objects(api, "v1", "Pod", labels=JOB_POD_LABEL)
    waiting = [Resource("Pod", str(p["metadata"]["name"]),
                        detail={"namespace": p["metadata"].get("namespace")}) for p in pods]
    return Look(left, waiting, found=endpoints)


def governance(services: FeatureServices, where: TeardownInput,
               known: Sequence[Resource], start: bool) -> Look:
    """The compute quotas, then the scheduler config once no quota needs it."""
    sagemaker = services.client("sagemaker")
    described = sagemaker_api.find_cluster(sagemaker, where.hyperpod_name)
    if described is None:
        return Look()
    arn = str(described["ClusterArn"])
    quotas = finders.quotas(sagemaker, arn)
    for quota in quotas:
        if quota.detail.get("status") != "Deleting":
            sagemaker_api.governance_call(
                sagemaker, "delete_compute_quota", f"deleting compute quota {quota.name}",
                ComputeQuotaId=quota.detail["id"])
    configs = finders.scheduler_configs(sagemaker, arn)
    for config in configs:
        if not quotas and config.detail.get("status") != "Deleting":
            sagemaker_api.governance_call(
                sagemaker, "delete_cluster_scheduler_config",
                f"deleting scheduler config {config.name}",
                ClusterSchedulerConfigId=config.detail["id"])
    return Look([*quotas, *configs])


def addons(services: FeatureServices, where: TeardownInput,
           known: Sequence[Resource], start: bool) -> Look:
    """The features' add-ons first, the shared ones once no feature's is left, and the pod
    identity associations (an add-on's own goes with it: EKS refuses to delete it alone)."""
    eks = services.client("eks")
    if eks_api.find_cluster(eks, where.eks_name) is None:
        return Look()
    found = finders.addons(eks, where.eks_name)
    features_left = any(a.name in finders.FEATURE_ADDONS for a in found)
    for addon in found:
        shared = addon.name not in finders.FEATURE_ADDONS
        if addon.detail.get("status") != "DELETING" and not (shared and features_left):
            eks_api.delete_addon(eks, where.eks_name, addon.name)
    associations = finders.associations(eks, where.eks_name)
    for association in associations:
        if not association.detail.get("owned"):
            eks_api.delete_pod_identity_association(eks, where.eks_name, association.name)
    return Look([*found, *associations])


def roles(services: FeatureServices, where: TeardownInput,
          known: Sequence[Resource], start: bool) -> Look:
    """The cluster's IAM roles and OIDC providers, the TLS bucket hypd made (emptied first;
    all deleted at once), and its AMP workspace (AMP takes a while)."""
    iam = services.client("iam")
    deleted = []
    for role in finders.cluster_roles(iam, where.tag):
        iam_api.delete_role(iam, role.name)
        deleted.append(role)
    for provider in finders.tagged_oidc_providers(iam, where.tag):
        iam_api.delete_oidc_provider(iam, str(provider.arn))
        deleted.append(provider)
    s3 = services.client("s3")
    # The plan named it (its name is the account's and Region's): nothing makes one later,
    # as every other operation of the cluster is refused while it is deleted.
    for bucket in (r for r in known if r.type == "S3Bucket"):
        tags = s3_api.bucket_tags(s3, bucket.name)
        if tags is None:
            continue  # gone
        if not BucketFact(bucket.name, tags).made_for(where.tag):
            raise TeardownFailed(
                f"stage roles: S3 bucket {bucket.name} no longer carries the tags hypd gave "
                f"it for cluster {where.tag}, and hypd deletes only what it made: delete it "
                "(or tag it again), then retry", details={"stage": "roles",
                                                         "remaining": [bucket.view()]})
        s3_api.empty_and_delete_bucket(s3, bucket.name)
        deleted.append(bucket)
    amp = services.client("amp")
    workspace = finders.tagged_workspace(amp, where.tag)
    if workspace is None:
        return Look(found=deleted)
    if workspace.detail.get("status") != "DELETING":  # gone only once AMP no longer lists it
        amp_api.delete_workspace(amp, str(workspace.detail["id"]))
    return Look([workspace], found=deleted)


for _stage, _look in (("workloads", workloads), ("governance", governance),
                      ("addons", addons), ("roles", roles)):
    stage_task(router, _stage, _look)
