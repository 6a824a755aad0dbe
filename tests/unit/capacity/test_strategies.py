"""hypd.capacity.strategies: one strategy per capacity kind, agreeing with the kinds' specs."""

from __future__ import annotations

import pytest

from hypd.capacity.inputs import AddGroupInput, AutoscalingInput, DeleteGroupInput
from hypd.capacity.strategies import STRATEGIES, Verified, recorded, strategy_of, verified_of
from hypd.errors import OperationStateError
from hypd.operations import lifecycle
from hypd.operations.kinds import CAPACITY_KINDS, SPECS, lock_scope
from hypd.operations.models import OperationKind


def test_every_capacity_kind_has_a_strategy_and_no_other_kind_has_one() -> None:
    assert set(STRATEGIES) == CAPACITY_KINDS
    with pytest.raises(OperationStateError, match="not a capacity operation"):
        strategy_of(OperationKind.CREATE_CLUSTER)


@pytest.mark.parametrize("kind", sorted(CAPACITY_KINDS))
def test_a_kind_has_a_verify_strategy_exactly_when_its_spec_has_a_verify_stage(
    kind: OperationKind,
) -> None:
    has_verify = "verify" in SPECS[kind].stages
    assert isinstance(STRATEGIES[kind], Verified) is has_verify
    if not has_verify:
        with pytest.raises(OperationStateError, match="has no verify stage"):
            verified_of(kind)


def test_a_family_stage_reads_only_its_own_kinds_input() -> None:
    delete = lifecycle.new_operation(
        OperationKind.DELETE_INSTANCE_GROUP,
        cluster_tag="train",
        input={"tag": "train", "group": "cpu"},
        lock_scope=lock_scope(OperationKind.DELETE_INSTANCE_GROUP, "train"),
    )
    assert recorded(delete, DeleteGroupInput) == DeleteGroupInput(tag="train", group="cpu")
    for model in (AddGroupInput, AutoscalingInput):
        with pytest.raises(OperationStateError, match=f"records no {model.__name__}"):
            recorded(delete, model)
