"""moto's server: the list of moto's modules is read once, and so are each response class's
method names.

``backends.list_of_moto_modules``: listed once (the server's dispatcher lists moto's modules
from the file system on every request, holding its lock).

``responses.method_names_from_class``: once per class (``BaseResponse.call_action`` asks
``inspect.getmembers`` for the class's functions on every request, to find the action's
method: a few hundred members sorted each time, 2% of the process with fifty creates).
"""

from __future__ import annotations

import functools
from typing import Any

from hypd_local.patches.engine import replace


def patch_server_dispatch() -> None:
    from moto import backends

    # The server's dispatcher asks for the list of moto's modules on every request, under its
    # one lock, and moto lists them from the file system each time (a listdir and a hundred
    # isdir calls): every request of every thread waited on it. The list cannot change.
    modules = tuple(backends.list_of_moto_modules())
    replace(backends, "list_of_moto_modules", lambda: modules)


def patch_response_methods() -> None:
    from moto.core import responses, utils

    names = functools.cache(utils.method_names_from_class)

    # A class's functions do not change once moto is imported; callers only read the list.
    def method_names_from_class(clazz: Any) -> list[str]:
        return names(clazz)

    replace(responses, "method_names_from_class", method_names_from_class)
