"""What a discover operation records as its input (the API writes it, the tasks read it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DiscoverInput(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    cluster_names: list[str] | None = Field(default=None, alias="clusterNames")
    """Record only the pairs with an EKS or HyperPod cluster of these names (None or empty:
    every pair, and the discovered records no longer found are reported missing)."""

    @property
    def only_names(self) -> set[str] | None:
        return set(self.cluster_names) if self.cluster_names else None
