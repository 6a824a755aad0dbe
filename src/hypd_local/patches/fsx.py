"""FSx: a file system has a life cycle on the virtual clock.

``FileSystem``: ``Lifecycle`` CREATING for `FSX_CREATE_SECONDS`, then AVAILABLE (moto reports
none, so a waiter would wait forever), a ``CreationTime`` and a Lustre ``MountName``.
``DeleteFileSystem``: the file system is DELETING for `FSX_DELETE_SECONDS` (described and
listed so), then gone (moto dropped it at once); a second DeleteFileSystem meanwhile answers
DELETING again. ``DescribeFileSystems`` of an ID that does not exist (or no longer) is FSx's
``FileSystemNotFound`` (moto left it out of the answer).
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from hypd_local.patches.engine import active, elapsed, replace

FSX_CREATE_SECONDS = 6 * 60
"""How long an FSx file system stays CREATING on the local cloud (AWS: about 5-10 minutes)."""
FSX_DELETE_SECONDS = 5 * 60
"""How long an FSx file system stays DELETING on the local cloud (made up: AWS documents the
status, not its duration)."""


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
        if getattr(self, "hypd_deleting", None) is not None:
            described["Lifecycle"] = "DELETING"
        described["CreationTime"] = created.timestamp()
        if self.file_system_type == "LUSTRE":
            lustre = dict(described.get("LustreConfiguration") or {})
            lustre.setdefault("MountName", self.hypd_mount_name)
            described["LustreConfiguration"] = lustre
        return described

    replace(FileSystem, "__init__", init)
    replace(FileSystem, "to_dict", to_dict)
    _patch_deletion()


def _patch_deletion() -> None:
    from moto.fsx.exceptions import FileSystemNotFound
    from moto.fsx.models import FSxBackend

    delete_file_system: Any = FSxBackend.delete_file_system
    describe_file_systems: Any = FSxBackend.describe_file_systems

    def purge(backend: Any) -> None:
        for ident, fs in list(backend.file_systems.items()):
            if elapsed(getattr(fs, "hypd_deleting", None), FSX_DELETE_SECONDS):
                del backend.file_systems[ident]

    def patched_delete(self: Any, file_system_id: str, *args: Any, **kwargs: Any) -> Any:
        engine = active()
        if engine is None:
            return delete_file_system(self, file_system_id, *args, **kwargs)
        purge(self)
        fs = self.file_systems.get(file_system_id)
        # FileSystemNotFound for an unknown one
        answer = delete_file_system(self, file_system_id, *args, **kwargs)
        if getattr(fs, "hypd_deleting", None) is None:
            fs.hypd_deleting = engine.clock.now()
        self.file_systems[file_system_id] = fs  # moto dropped it at once
        return answer

    def patched_describe(self: Any, file_system_ids: list[str], **kwargs: Any) -> Any:
        if active() is not None:
            purge(self)
            missing = [i for i in file_system_ids or [] if i not in self.file_systems]
            if missing:
                raise FileSystemNotFound(missing[0])
        return describe_file_systems(self, file_system_ids, **kwargs)

    replace(FSxBackend, "delete_file_system", patched_delete)
    replace(FSxBackend, "describe_file_systems", patched_describe)
