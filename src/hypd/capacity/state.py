"""The recorded state of a cluster's managed autoscaling (`CLUSTER#{tag}` / `FEATURE#autoscaling`).

Written by the autoscaling operations when they end: what enabling made (the role, the
NodeClass and NodePool, the settings) or that it is off. The API compares a request with it
(and with DescribeCluster) to answer a request that matches reality without starting anything.
It lives beside the cluster record, not in it, so discovery's rewrites of the record keep it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from hypd.aws.dynamodb import Table, decode_body, encode_item
from hypd.capacity.autoscaling import AutoscalingSettings
from hypd.table import cluster_feature_key

FEATURE = "autoscaling"


class AutoscalingState(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    enabled: bool
    settings: AutoscalingSettings | None = None
    role_arn: str | None = Field(default=None, alias="roleArn")
    node_class: str | None = Field(default=None, alias="nodeClass")
    node_pool: str | None = Field(default=None, alias="nodePool")
    operation_id: str = Field(alias="operationId")
    updated_at: str = Field(alias="updatedAt")


class AutoscalingStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def get(self, tag: str) -> AutoscalingState | None:
        item = self._table.get(cluster_feature_key(tag, FEATURE))
        return AutoscalingState.model_validate(decode_body(item)) if item else None

    def put(self, tag: str, state: AutoscalingState) -> None:
        # Unconditional: only the operation holding the cluster's lock writes it.
        self._table.put(
            encode_item(
                cluster_feature_key(tag, FEATURE), state.model_dump(mode="json", by_alias=True)
            )
        )
