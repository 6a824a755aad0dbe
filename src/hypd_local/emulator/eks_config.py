"""The check CreateAddon and UpdateAddon make of ``configurationValues`` against the add-on
version's schema (`eks_schemas`, DescribeAddonConfiguration's answer).

`configuration_errors` is a small checker of the schema keywords the schemas use (``type``,
``properties``, ``additionalProperties``, ``required``, ``enum``, ``minimum``); its messages
follow the wording EKS's validator gives (``$.alb.enabled: string found, boolean expected``),
and `invalid_configuration` puts them in EKS's InvalidParameterException message:
``ConfigurationValue provided in request is not supported: Json schema validation failed with
error: [...]``. ``configurationValues`` may be JSON or YAML, as EKS accepts.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any

from hypd_local.kube.validation import json_type

yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs

_PREFIX = ("ConfigurationValue provided in request is not supported: Json schema validation "
           "failed with error: ")


def parse_configuration(text: str) -> Any:
    """The value of a ``configurationValues`` string (JSON, else YAML; empty: ``{}``)."""
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{_PREFIX}[$: the value is neither JSON nor YAML]") from exc
    return json.loads(json.dumps(value, default=str))  # as JSON: YAML's dates are strings


def _fits(found: str, expected: str) -> bool:
    return found == expected or (expected == "number" and found == "integer")


def configuration_errors(schema: Mapping[str, Any], value: Any, path: str = "$") -> list[str]:
    """What is wrong with ``value`` under ``schema``, one message per problem, in EKS's
    validator's words; [] when it conforms."""
    expected = schema.get("type")
    found = json_type(value)
    if isinstance(expected, str) and not _fits(found, expected):
        return [f"{path}: {found} found, {expected} expected"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: does not have a value in the enumeration "
                      f"[{', '.join(str(v) for v in schema['enum'])}]")
    if "minimum" in schema and found in ("integer", "number") and value < schema["minimum"]:
        errors.append(f"{path}: must have a minimum value of {schema['minimum']}")
    if found != "object":
        return errors
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in value:
            errors.append(f"{path}.{name}: is missing but it is required")
    for name, item in value.items():
        if name in properties:
            errors += configuration_errors(properties[name], item, f"{path}.{name}")
        elif schema.get("additionalProperties", True) is False:
            errors.append(f"{path}.{name}: is not defined in the schema and the schema does "
                          "not allow additional properties")
    return errors


def invalid_configuration(schema_text: str, text: str) -> str | None:
    """The InvalidParameterException message for ``configurationValues`` ``text`` under the
    schema document ``schema_text``, or None when they conform."""
    try:
        value = parse_configuration(text)
    except ValueError as exc:
        return str(exc)
    errors = configuration_errors(json.loads(schema_text), value)
    return f"{_PREFIX}[{', '.join(errors)}]" if errors else None
