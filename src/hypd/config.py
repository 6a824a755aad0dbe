"""Function configuration: the environment, parsed once at import time into a model."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

from hypd.operations.kinds import SPECS
from hypd.operations.models import OperationKind

STATE_MACHINE_SETTINGS: dict[OperationKind, str] = {
    kind: spec.state_machine_variable for kind, spec in SPECS.items()
}
"""The environment variable (set by template.yaml) that names each kind's state machine (from
its spec: `hypd.operations.kinds`)."""


class Settings(BaseModel):
    """What a function reads from its environment (set by template.yaml)."""

    model_config = ConfigDict(frozen=True)

    table_name: str = Field(min_length=3)
    region: str | None = None
    state_machines: dict[OperationKind, str] = Field(default_factory=dict)
    """The state machine of each operation kind this function starts (the API's)."""

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)
        return cls(
            table_name=env.get("TABLE_NAME", ""),
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"),
            state_machines={
                kind: env[variable]
                for kind, variable in STATE_MACHINE_SETTINGS.items()
                if env.get(variable)
            },
        )
