"""What every feature step answers and how it fails (shared by the reconciler and the teams;
kept apart so that the API's routes import neither)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hypd.errors import PermanentError

CHECK_SECONDS = 15
"""How soon to look again at what is on its way (an add-on CREATING past its first look)."""


class FeatureStepFailed(PermanentError):
    """A step of a feature failed: `details` has ``feature``, ``step`` and AWS's error."""

    code = "FeatureStepFailed"


@contextmanager
def step(feature: str, name: str) -> Iterator[None]:
    """Name the feature and the step in any permanent failure inside."""
    try:
        yield
    except FeatureStepFailed:
        raise
    except PermanentError as exc:
        raise FeatureStepFailed(
            f"{feature}: {name}: {exc}",
            details={**exc.details, "feature": feature, "step": name},
        ) from exc


def failed(feature: str, name: str, message: str, **details: Any) -> FeatureStepFailed:
    return FeatureStepFailed(
        f"{feature}: {name}: {message}", details={"feature": feature, "step": name, **details}
    )


@dataclass(frozen=True)
class Progress:
    done: bool
    actions: list[str] = field(default_factory=list)
    wait_seconds: int = CHECK_SECONDS

    def result(self, about: str | None = None) -> dict[str, Any]:
        """The polling answer; while not done, its actions are what it waits for (`about`
        names the phase in front of them)."""
        answer = {
            "ready": self.done,
            "waitSeconds": 0 if self.done else self.wait_seconds,
            "actions": self.actions,
        }
        if not self.done and self.actions:
            answer["waiting"] = (f"{about}: " if about else "") + "; ".join(self.actions)
        return answer


