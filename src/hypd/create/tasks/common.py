"""What the create tasks share: the one router they register on, the services they are given,
and the outputs of the stages that later stages read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd.clusters.create_request import ResolvedCreate
from hypd.clusters.store import ClusterStore
from hypd.config import CreateTaskSettings
from hypd.kubernetes import TokenCache
from hypd.kubernetes.client import ClusterAccess
from hypd.operations.locks import LockStore
from hypd.operations.models import Operation
from hypd.operations.steps import Steps
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore
from hypd.tasks import TaskRouter

router = TaskRouter()
"""Every task of the create-cluster state machine (each stage group's module registers its
own; `hypd.create.tasks` imports them all)."""


@dataclass
class CreateServices:
    operations: OperationStore
    clusters: ClusterStore
    locks: LockStore
    waiters: WaiterStore
    client: Callable[[str], Any]
    """A boto3 client per service name, created on first use and reused."""
    settings: CreateTaskSettings
    tokens: TokenCache | None = None

    def __post_init__(self) -> None:
        self._access = ClusterAccess(
            lambda: self.client("eks"), lambda: self.settings.region, self.tokens
        )

    @property
    def steps(self) -> Steps:
        return Steps(self.operations, self.locks)

    def kubernetes(self, cluster_name: str) -> Any:
        """A Kubernetes API client for the EKS cluster, authenticated as this function."""
        return self._access.api(cluster_name)

    def load(self, operation_id: str) -> tuple[Operation, ResolvedCreate]:
        """The operation and its input, the resolved request."""
        operation = self.operations.get(operation_id)
        return operation, ResolvedCreate.model_validate(operation.input)


# ---------------------------------------------------------------------------- stage outputs
class _Output(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class NetworkOutput(_Output):
    stack_name: str = Field(alias="stackName")
    vpc_id: str = Field(alias="vpcId")
    control_plane_subnet_ids: list[str] = Field(alias="controlPlaneSubnetIds")
    security_group_id: str = Field(alias="securityGroupId")
    compute_subnets: dict[str, str] = Field(alias="computeSubnets")
    """Instance group name -> its compute subnet."""


class EksOutput(_Output):
    name: str
    arn: str
    version: str | None = None
    endpoint: str | None = None
    access_principal: str = Field(alias="accessPrincipal")
