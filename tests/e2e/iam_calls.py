"""What the functions did on the local cloud, as IAM saw it.

The local cloud authorises every call a function makes against the policies of the
function's own role (hypd_local.iam): a call its role does not allow fails there with
AccessDenied. These helpers record, for each function, the API calls authorised for its role
and every denial, so a test can show that a path ran as the functions it should and that IAM
refused nothing on the way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from hypd_local.iam.enforce import Authorization


@dataclass
class Calls:
    """API calls (``prefix:Operation``) by function, and every denial of any principal."""

    by_function: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    denials: list[str] = field(default_factory=list)

    def __getitem__(self, function: str) -> set[str]:
        return self.by_function[function]


@pytest.fixture
def calls_by_function(cloud: Any) -> Iterator[Calls]:
    roles = {spec.role_arn: logical_id for logical_id, spec in cloud.stack.functions.items()}
    calls = Calls()

    def observe(authorization: Authorization) -> None:
        function = roles.get(authorization.principal.arn)
        if authorization.denial is not None:
            calls.denials.append(authorization.denial.message)
        elif function is not None:
            calls.by_function[function].add(authorization.operation)

    with cloud.watch_authorizations(observe):
        yield calls


def assert_allowed(calls: Calls, functions: Iterable[str]) -> None:
    """Each function made calls as its own role, and IAM denied nobody anything."""
    for function in functions:
        assert calls[function], f"{function} made no AWS call as its role"
    assert calls.denials == []
