"""Amazon Managed Service for Prometheus (moto's ``amp``): a workspace has a life cycle.

``Workspace``: ``status.statusCode`` CREATING for `AMP_CREATE_SECONDS` of virtual time, then
ACTIVE (moto answers ACTIVE at once, so nothing would ever wait for a workspace, as AWS's
``WorkspaceActive`` waiter does), and ``createdAt`` on the virtual clock.
``PrometheusServiceBackend.delete_workspace``: an unknown workspace is AWS's
``ResourceNotFoundException`` (moto accepts it silently).
"""

from __future__ import annotations

import datetime
from typing import Any

from hypd_local.patches.engine import active, replace

AMP_CREATE_SECONDS = 60
"""How long a workspace stays CREATING on the local cloud (AWS's ``WorkspaceActive`` waiter
polls every 2 s, up to 60 times)."""


def patch_amp() -> None:
    from moto.amp.exceptions import WorkspaceNotFound
    from moto.amp.models import PrometheusServiceBackend, Workspace

    original_init: Any = Workspace.__init__
    original_to_dict: Any = Workspace.to_dict

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        engine = active()
        if engine is not None:
            self.hypd_created = engine.clock.now()
            self.created_at = self.hypd_created.timestamp()

    def to_dict(self: Any) -> dict[str, Any]:
        described: dict[str, Any] = original_to_dict(self)
        created = getattr(self, "hypd_created", None)
        engine = active()
        if created is None or engine is None:
            return described
        ready = created + datetime.timedelta(seconds=AMP_CREATE_SECONDS)
        described["status"] = {"statusCode": "ACTIVE" if engine.clock.now() >= ready
                               else "CREATING"}
        return described

    def delete_workspace(self: Any, workspace_id: str) -> None:
        if workspace_id not in self.workspaces:
            raise WorkspaceNotFound(workspace_id)
        self.workspaces.pop(workspace_id)

    replace(Workspace, "__init__", init)
    replace(Workspace, "to_dict", to_dict)
    replace(PrometheusServiceBackend, "delete_workspace", delete_workspace)
