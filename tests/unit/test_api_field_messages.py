"""hypd.api.field_messages: every pattern the API validates with has words, and pydantic's
messages become what the field must be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hypd.api.field_messages import PATTERN_WORDS, field_message

OPENAPI = Path(__file__).resolve().parents[2] / "src" / "hypd_cli" / "openapi.json"


def patterns(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
        return found.union(*(patterns(v) for k, v in node.items() if k != "pattern"))
    if isinstance(node, list):
        return set().union(*(patterns(v) for v in node))
    return set()


def test_every_pattern_of_the_openapi_document_has_words() -> None:
    used = patterns(json.loads(OPENAPI.read_text()))

    assert len(used) > 20
    assert used - set(PATTERN_WORDS) == set()


@pytest.mark.parametrize(("error", "words"), [
    ({"type": "string_pattern_mismatch", "msg": "String should match pattern '^x$'",
      "ctx": {"pattern": r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$"}},
     "must be letters, digits and hyphens, starting and ending with a letter or digit"),
    ({"type": "string_pattern_mismatch", "msg": "...", "ctx": {"pattern": "^new$"}},
     "must be in the format the API reference gives"),
    ({"type": "missing", "msg": "Field required"}, "is required"),
    ({"type": "int_parsing", "msg": "Input should be a valid integer, unable to parse"},
     "must be a whole number"),
    ({"type": "string_too_long", "msg": "String should have at most 63 characters",
      "ctx": {"max_length": 63}}, "must be at most 63 characters"),
    ({"type": "value_error", "msg": "Value error, count must be 0 or more"},
     "count must be 0 or more"),
    ({"type": "literal_error", "msg": "Input should be 'spot' or 'on-demand'"},
     "must be 'spot' or 'on-demand'"),
    ({"type": "extra_forbidden", "msg": "Extra inputs are not permitted"},
     "is not a field of this request"),
    ({"type": "greater_than_equal", "msg": "Input should be greater than or equal to 1",
      "ctx": {"ge": 1}}, "must be 1 or more"),
])
def test_pydantic_messages_become_what_the_field_must_be(
        error: dict[str, Any], words: str) -> None:
    assert field_message(error) == words
