"""The delete-cluster operation's recorded input (a model: imports nothing of hypd)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class TeardownInput(BaseModel):
    """A delete-cluster operation's input: where the cluster is and how to delete it."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    tag: str
    eks_name: str = Field(alias="eksName")
    hyperpod_name: str = Field(alias="hyperPodName")
    force: bool = False
    vpc_id: str | None = Field(default=None, alias="vpcId")
    planned: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """The plan's steps when the DELETE was accepted: stage -> resource views. A stage ends
    by reporting these deleted (each gone), with what else of its kind it found."""
    kept: list[dict[str, Any]] = Field(default_factory=list)
    """What the plan keeps, each view with its ``reason``: the operation's output repeats it."""
