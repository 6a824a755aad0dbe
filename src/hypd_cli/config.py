"""Named connections (contexts), as kubectl keeps them: an endpoint, profile, Region, stack name
and signing choice under a name, one of them current, so a user stops exporting variables.

The file is ``$HYPD_CONFIG``, else ``$XDG_CONFIG_HOME/hypd/config.json``, else
``~/.config/hypd/config.json``: ``{"currentContext": NAME, "contexts": {NAME: {"endpoint": ...,
"profile": ..., "region": ..., "stackName": ..., "noSignRequest": bool}}}``. A command's own
flags win, then the environment (``HYPD_ENDPOINT``, ``HYPD_STACK_NAME``), then the context
(``--context NAME``, else ``$HYPD_CONTEXT``, else the current one).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

CONFIG_ENV = "HYPD_CONFIG"
CONTEXT_ENV = "HYPD_CONTEXT"
FIELDS = ("endpoint", "profile", "region", "stackName", "noSignRequest")


class ConfigError(ValueError):
    """The configuration file or a context named cannot be used (the message says why)."""


def config_path() -> Path:
    configured = os.environ.get(CONFIG_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "hypd" / "config.json"


def load() -> dict[str, Any]:
    """The configuration; an empty one when there is no file."""
    path = config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"currentContext": None, "contexts": {}}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a hypd configuration ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("contexts", {}), dict):
        raise ConfigError(f"{path}: not a hypd configuration (no contexts object)")
    data.setdefault("contexts", {})
    data.setdefault("currentContext", None)
    return data


def save(data: dict[str, Any]) -> Path:
    """Write the configuration (a new file renamed over the old one); returns its path."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".config.", suffix=".json",
                                     delete=False, encoding="utf-8") as partial:
        json.dump(data, partial, indent=2, sort_keys=True)
        partial.write("\n")
    Path(partial.name).replace(path)
    return path


def active(name: str | None = None) -> tuple[str | None, dict[str, Any]]:
    """The context a command uses: `name` (``--context``), else ``$HYPD_CONTEXT``, else the
    current one; (None, {}) when there is none. An unknown name is a `ConfigError` listing
    the known ones."""
    data = load()
    chosen = name or os.environ.get(CONTEXT_ENV) or data.get("currentContext")
    if not chosen:
        return None, {}
    contexts = data["contexts"]
    if chosen not in contexts:
        known = ", ".join(sorted(contexts)) or "none yet: hypd config set-context NAME ..."
        raise ConfigError(f"context {chosen!r} does not exist (known: {known})")
    return str(chosen), dict(contexts[chosen])
