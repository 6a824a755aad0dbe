"""FSx: a file system has a life cycle on the virtual clock.

``FileSystem``: ``Lifecycle`` CREATING for `FSX_CREATE_SECONDS`, then AVAILABLE (moto reports
none, so a waiter would wait forever), a ``CreationTime`` and a Lustre ``MountName``.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from hypd_local.patches.engine import active, replace

FSX_CREATE_SECONDS = 6 * 60
"""How long an FSx file system stays CREATING on the local cloud (AWS: about 5-10 minutes)."""


def patch_fsx() -> None:
    from moto.fsx.models import FileSystem

    original_init: Any = FileSystem.__init__
    original_to_dict: Any = FileSystem.to_dict

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        engine = active()
        self.hypd_created = (
            engine.clock.now() if engine is not None else datetime.datetime.now(datetime.UTC)
        )
        self.hypd_mount_name = uuid.uuid4().hex[:8]

    def to_dict(self: Any) -> dict[str, Any]:
        described: dict[str, Any] = original_to_dict(self)
        created = getattr(self, "hypd_created", None)
        if created is None:
            return described
        engine = active()
        now = engine.clock.now() if engine is not None else datetime.datetime.now(datetime.UTC)
        ready = created + datetime.timedelta(seconds=FSX_CREATE_SECONDS)
        described["Lifecycle"] = "AVAILABLE" if now >= ready else "CREATING"
        described["CreationTime"] = created.timestamp()
        if self.file_system_type == "LUSTRE":
            lustre = dict(described.get("LustreConfiguration") or {})
            lustre.setdefault("MountName", self.hypd_mount_name)
            described["LustreConfiguration"] = lustre
        return described

    replace(FileSystem, "__init__", init)
    replace(FileSystem, "to_dict", to_dict)
