"""The event schemas under events/schemas/ are the detail models' (regenerated with
`python -m hypd.events.model`) and valid JSON Schema draft 4; each sample under events/
validates against its schema, and a detail with a member the model does not have does not.
(tests/unit/events/test_derive.py validates every event `derive` makes.)"""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft4Validator  # type: ignore[import-untyped,unused-ignore]

from hypd.events.model import DETAILS, SCHEMA_FILES, event_schema
from tests.unit.events.schemas import EVENTS, schema_file, validator


@pytest.mark.parametrize("detail_type", sorted(DETAILS))
def test_the_checked_in_schema_is_the_models_and_is_draft_4(detail_type: str) -> None:
    checked_in = json.loads(schema_file(detail_type).read_text())
    assert checked_in == event_schema(detail_type), "run: python -m hypd.events.model"
    Draft4Validator.check_schema(checked_in)


@pytest.mark.parametrize("detail_type", sorted(DETAILS))
def test_the_sample_validates_and_a_changed_one_does_not(detail_type: str) -> None:
    sample = json.loads((EVENTS / SCHEMA_FILES[detail_type]).read_text())
    assert sample["detail-type"] == detail_type
    validator(detail_type).validate(sample)

    extra = {**sample, "detail": {**sample["detail"], "surprise": 1}}
    assert list(validator(detail_type).iter_errors(extra))
    renamed = {**sample, "detail-type": "hypd Something Else"}
    assert list(validator(detail_type).iter_errors(renamed))
    missing = {**sample, "detail": {k: v for k, v in sample["detail"].items()
                                    if k != "eventId"}}
    assert list(validator(detail_type).iter_errors(missing))


def test_the_template_registers_each_schema_as_checked_in() -> None:
    from hypd_local.template import read_template, resources_of_type

    template = read_template(EVENTS.parent / "template.yaml")
    registered = {json.loads(props["Content"])["title"]: props
                  for props in (r["Properties"] for r in resources_of_type(
                      template, "AWS::EventSchemas::Schema").values())}
    assert set(registered) == set(DETAILS)
    for detail_type, props in registered.items():
        assert props["Type"] == "JSONSchemaDraft4"
        assert json.loads(props["Content"]) == json.loads(schema_file(detail_type).read_text())
