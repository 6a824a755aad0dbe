"""The task router of the capacity tasks function, shared by its task modules
(`hypd.capacity.tasks`, `hypd.capacity.autoscaling_tasks`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from hypd.capacity.services import CapacityServices
from hypd.capacity.strategies import In, Strategy, recorded, strategy_of
from hypd.operations import steps
from hypd.operations.models import Operation
from hypd.operations.steps import OperationInput
from hypd.tasks import TaskRouter

router = TaskRouter()


class Poll(Protocol):
    def __call__(
        self, task: OperationInput, services: CapacityServices, *, start: bool
    ) -> dict[str, Any]: ...


def polled(first: str, then: str) -> Callable[[Poll], Poll]:
    """Register a stage's polling work on the capacity router as two tasks: `first` opens the
    stage's attempt, `then` (after each Wait) looks again (`hypd.operations.steps.polled`)."""
    return steps.polled(router, first, then)


def load(services: CapacityServices, operation_id: str) -> tuple[Operation, Strategy[Any], Any]:
    """The operation, its kind's strategy and its recorded input."""
    operation = services.operations.get(operation_id)
    strategy = strategy_of(operation.kind)
    return operation, strategy, strategy.read(operation)


def load_as(services: CapacityServices, operation_id: str, model: type[In]) -> tuple[Operation, In]:
    """The operation and its input, for a stage only the kinds recording `model` have."""
    operation = services.operations.get(operation_id)
    return operation, recorded(operation, model)
