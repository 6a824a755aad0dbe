"""Starting a create: the cluster's record and its create-cluster operation, together."""

from __future__ import annotations

from hypd import clock
from hypd.clusters.create_request import ResolvedCreate, eks_cluster_name
from hypd.clusters.models import Cluster, ClusterSource, ClusterStatus
from hypd.clusters.store import ClusterStore, cluster_exists
from hypd.operations import lifecycle
from hypd.operations.models import Operation, OperationKind
from hypd.operations.starter import Starter, new_operation
from hypd.operations.store import OperationStore


def start_create(
    starter: Starter, resolved: ResolvedCreate, *, replaces_orphan_of: str | None = None
) -> Operation:
    """Record the new cluster (CREATING) and start its create-cluster operation.

    The operation's input is the resolved request (camelCase). The lock `cluster#{tag}`, the
    operation and the cluster record (conditional on the tag being new) are one transaction
    (`Starter.launch`); so of two simultaneous creates of one tag exactly one starts and the
    other gets 409, and a failed start leaves no lock and no record behind (a refused
    StartExecution leaves the operation FAILED and the cluster FAILED).

    Raises:
        ClusterExists: the tag is a cluster already.
        ConflictError: another operation on the tag is in progress.
    """
    machine = starter.state_machine_arn(OperationKind.CREATE_CLUSTER)
    tag = resolved.tag
    operation = new_operation(OperationKind.CREATE_CLUSTER, resolved, cluster_tag=tag)
    region, anchor = created_cluster_arn(machine, tag)
    cluster = Cluster(
        tag=tag,
        source=ClusterSource.CREATED,
        region=region,
        anchor_arn=anchor,
        created_at=operation.created_at,
        updated_at=operation.created_at,
        last_operation_id=operation.id,
        status=ClusterStatus.CREATING,
    )
    return starter.launch(operation, new_cluster=cluster, replaces_orphan_of=replaces_orphan_of)


def created_cluster_arn(state_machine_arn: str, tag: str) -> tuple[str, str]:
    """The Region and the EKS cluster ARN (the record's anchor) of the cluster `tag` creates.

    Partition, Region and account are the state machine's (the deployment's own).
    """
    _arn, partition, _service, region, account, *_rest = state_machine_arn.split(":")
    return region, f"arn:{partition}:eks:{region}:{account}:cluster/{eks_cluster_name(tag)}"


def orphaned_create_of(
    clusters: ClusterStore, operations: OperationStore, tag: str
) -> str | None:
    """None when the tag is free; the operation id of a record of it that a create may
    replace (the conditional write checks the record still names that operation):

    - an orphan: a CREATING record whose create operation was never recorded (the function
      crashed between the two writes) for longer than any start takes;
    - a DELETED record: the tag's cluster was torn down; its operations stay in the history.

    Raises:
        ClusterExists: the tag is a cluster.
    """
    existing = clusters.find(tag)
    if existing is None:
        return None
    if existing.status is ClusterStatus.DELETED and existing.last_operation_id:
        return existing.last_operation_id
    if _is_orphan(existing, operations):
        assert existing.last_operation_id is not None
        return existing.last_operation_id
    raise cluster_exists(tag, existing)


def _is_orphan(cluster: Cluster, operations: OperationStore) -> bool:
    if (
        cluster.source is not ClusterSource.CREATED
        or cluster.status is not ClusterStatus.CREATING
        or not cluster.last_operation_id
    ):
        return False
    age = clock.now() - lifecycle.parse_time(cluster.updated_at)
    return age >= lifecycle.START_GRACE and operations.find(cluster.last_operation_id) is None
