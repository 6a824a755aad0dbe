"""Path parameters shared by the routers: one pattern per identifier, as botocore has it."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Path

from hypd.clusters.models import CLUSTER_TAG_PATTERN

NODE_ID_PATTERN = r"^i-[a-f0-9]{8}(?:[a-f0-9]{9})?$"
"""sagemaker ``ClusterNodeId``: an EC2 instance id."""

Tag = Annotated[str, Path(pattern=CLUSTER_TAG_PATTERN, description="The cluster's tag.")]
NodeId = Annotated[
    str,
    Path(
        alias="nodeId",
        pattern=NODE_ID_PATTERN,
        description="The node's instance id (GET /clusters/{tag}/nodes).",
    ),
]
