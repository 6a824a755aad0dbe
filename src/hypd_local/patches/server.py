"""moto's server: the list of moto's modules is read once.

``backends.list_of_moto_modules``: listed once (the server's dispatcher lists moto's modules
from the file system on every request, holding its lock).
"""

from __future__ import annotations

from hypd_local.patches.engine import replace


def patch_server_dispatch() -> None:
    from moto import backends

    # The server's dispatcher asks for the list of moto's modules on every request, under its
    # one lock, and moto lists them from the file system each time (a listdir and a hundred
    # isdir calls): every request of every thread waited on it. The list cannot change.
    modules = tuple(backends.list_of_moto_modules())
    replace(backends, "list_of_moto_modules", lambda: modules)
