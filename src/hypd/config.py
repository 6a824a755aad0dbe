"""Function configuration: the environment, parsed once at import time into a model."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field


class Settings(BaseModel):
    """What a function reads from its environment (set by template.yaml)."""

    model_config = ConfigDict(frozen=True)

    table_name: str = Field(min_length=3)
    region: str | None = None
    discover_state_machine_arn: str | None = None
    create_cluster_state_machine_arn: str | None = None

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)
        return cls(
            table_name=env.get("TABLE_NAME", ""),
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"),
            discover_state_machine_arn=env.get("DISCOVER_STATE_MACHINE_ARN") or None,
            create_cluster_state_machine_arn=env.get("CREATE_CLUSTER_STATE_MACHINE_ARN") or None,
        )
