"""CloudFormation intrinsic functions, conditions and parameters, resolved locally.

Only what a SAM template of this kind uses is implemented; anything else fails loudly with the
path of the offending value, so a template change that the local cloud cannot follow is noticed
at start-up instead of producing a silently wrong stack.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

NO_VALUE: Final = object()
"""The value of ``Ref: AWS::NoValue``: the enclosing key or list item is removed."""

_SUB_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


class TemplateError(Exception):
    """The template cannot be loaded or uses something the local cloud does not support."""


RefLookup = Callable[[str, str], Any]
"""(logical id or parameter name, where) -> the value of ``Ref``."""
AttLookup = Callable[[str, str, str], Any]
"""(logical id, attribute, where) -> the value of ``Fn::GetAtt``."""


def is_intrinsic(value: Any) -> bool:
    """A one-key mapping whose key is ``Ref``, ``Condition`` or ``Fn::...``."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return False
    (key,) = value.keys()
    return key in ("Ref", "Condition") or str(key).startswith("Fn::")


class Resolver:
    """Evaluates intrinsic functions against the stack being built.

    ``ref`` and ``get_att`` are supplied by the stack, which computes resource names lazily;
    conditions are evaluated once and memoised.
    """

    def __init__(
        self,
        *,
        ref: RefLookup,
        get_att: AttLookup,
        conditions: Mapping[str, Any],
        mappings: Mapping[str, Any],
        region: str,
    ) -> None:
        self._ref = ref
        self._get_att = get_att
        self._condition_defs = conditions
        self._mappings = mappings
        self._region = region
        self._condition_values: dict[str, bool] = {}
        self._evaluating: set[str] = set()

    # ------------------------------------------------------------------ conditions
    def condition(self, name: str, where: str = "Conditions") -> bool:
        """The value of the named condition."""
        if name in self._condition_values:
            return self._condition_values[name]
        if name not in self._condition_defs:
            raise TemplateError(f"{where}: unknown condition {name!r}")
        if name in self._evaluating:
            raise TemplateError(f"{where}: condition {name!r} refers to itself")
        self._evaluating.add(name)
        try:
            value = self._condition_expr(self._condition_defs[name], f"Conditions.{name}")
        finally:
            self._evaluating.discard(name)
        self._condition_values[name] = value
        return value

    def _condition_expr(self, expr: Any, where: str) -> bool:
        if isinstance(expr, bool):
            return expr
        if not is_intrinsic(expr):
            raise TemplateError(f"{where}: a condition must be a condition function, got {expr!r}")
        ((fn, arg),) = expr.items()
        if fn == "Condition":
            return self.condition(str(arg), where)
        if fn == "Fn::Equals":
            left, right = self._pair(arg, fn, where)
            return _scalar_str(self.resolve(left, where)) == _scalar_str(self.resolve(right, where))
        if fn == "Fn::Not":
            items = self._list_arg(arg, fn, where)
            if len(items) != 1:
                raise TemplateError(f"{where}: Fn::Not takes one condition")
            return not self._condition_expr(items[0], where)
        if fn in ("Fn::And", "Fn::Or"):
            items = self._list_arg(arg, fn, where)
            values = [self._condition_expr(item, where) for item in items]
            return all(values) if fn == "Fn::And" else any(values)
        raise TemplateError(f"{where}: {fn} is not a condition function")

    # ------------------------------------------------------------------ values
    def resolve(self, value: Any, where: str) -> Any:
        """``value`` with every intrinsic function replaced by its result.

        ``AWS::NoValue`` removes the enclosing key or list item; at the top level it gives
        `NO_VALUE`.
        """
        if isinstance(value, Mapping):
            if is_intrinsic(value):
                return self._intrinsic(value, where)
            out: dict[str, Any] = {}
            for key, item in value.items():
                resolved = self.resolve(item, f"{where}.{key}")
                if resolved is not NO_VALUE:
                    out[str(key)] = resolved
            return out
        if isinstance(value, list):
            items = [self.resolve(item, f"{where}[{i}]") for i, item in enumerate(value)]
            return [item for item in items if item is not NO_VALUE]
        return value

    def _intrinsic(self, value: Mapping[str, Any], where: str) -> Any:
        ((fn, arg),) = value.items()
        where = f"{where}.{fn}"
        if fn == "Ref":
            return self._ref(str(self.resolve(arg, where)), where)
        if fn == "Condition":
            return self.condition(str(arg), where)
        handler = getattr(self, "_fn_" + fn.removeprefix("Fn::").lower(), None)
        if handler is None:
            raise TemplateError(f"{where}: {fn} is not supported by the local cloud")
        return handler(arg, where)

    def _fn_getatt(self, arg: Any, where: str) -> Any:
        if isinstance(arg, str):
            logical_id, _, attribute = arg.partition(".")
        else:
            logical_id, attribute = self._pair(arg, "Fn::GetAtt", where)
            attribute = self.resolve(attribute, where)
        if not logical_id or not attribute:
            raise TemplateError(f"{where}: Fn::GetAtt needs a logical id and an attribute")
        return self._get_att(str(logical_id), str(attribute), where)

    def _fn_sub(self, arg: Any, where: str) -> str:
        if isinstance(arg, str):
            text, variables = arg, {}
        else:
            text, raw_vars = self._pair(arg, "Fn::Sub", where)
            if not isinstance(text, str) or not isinstance(raw_vars, Mapping):
                raise TemplateError(f"{where}: Fn::Sub takes a string or [string, {{vars}}]")
            variables = {str(k): self.resolve(v, f"{where}.{k}") for k, v in raw_vars.items()}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return _scalar_str(variables[name], f"{where}: ${{{name}}}")
            if "." in name:
                logical_id, _, attribute = name.partition(".")
                return _scalar_str(self._get_att(logical_id, attribute, where), where)
            return _scalar_str(self._ref(name, where), f"{where}: ${{{name}}}")

        return _SUB_PLACEHOLDER.sub(replace, text)

    def _fn_join(self, arg: Any, where: str) -> str:
        delimiter, items = self._pair(arg, "Fn::Join", where)
        resolved = self.resolve(items, where)
        if not isinstance(resolved, list):
            raise TemplateError(f"{where}: Fn::Join needs a list")
        return str(delimiter).join(_scalar_str(item, where) for item in resolved)

    def _fn_select(self, arg: Any, where: str) -> Any:
        index, items = self._pair(arg, "Fn::Select", where)
        position = int(self.resolve(index, where))
        resolved = self.resolve(items, where)
        if not isinstance(resolved, list) or not 0 <= position < len(resolved):
            raise TemplateError(f"{where}: Fn::Select index {position} out of range")
        return resolved[position]

    def _fn_split(self, arg: Any, where: str) -> list[str]:
        delimiter, text = self._pair(arg, "Fn::Split", where)
        return _scalar_str(self.resolve(text, where), where).split(str(delimiter))

    def _fn_if(self, arg: Any, where: str) -> Any:
        items = self._list_arg(arg, "Fn::If", where)
        if len(items) != 3:
            raise TemplateError(f"{where}: Fn::If takes [condition, value if true, value if false]")
        chosen = items[1] if self.condition(str(items[0]), where) else items[2]
        return self.resolve(chosen, where)

    def _fn_base64(self, arg: Any, where: str) -> str:
        text = _scalar_str(self.resolve(arg, where), where)
        return base64.b64encode(text.encode()).decode()

    def _fn_findinmap(self, arg: Any, where: str) -> Any:
        items = self.resolve(self._list_arg(arg, "Fn::FindInMap", where), where)
        if len(items) < 3:
            raise TemplateError(f"{where}: Fn::FindInMap takes [map, top key, second key]")
        try:
            return self._mappings[items[0]][items[1]][items[2]]
        except (KeyError, TypeError):
            raise TemplateError(f"{where}: no mapping value for {items[:3]!r}") from None

    def _fn_getazs(self, arg: Any, where: str) -> list[str]:
        region = self.resolve(arg, where) or self._region
        return [f"{region}{zone}" for zone in "abc"]

    def _fn_tojsonstring(self, arg: Any, where: str) -> str:
        return json.dumps(self.resolve(arg, where), separators=(",", ":"))

    def _fn_length(self, arg: Any, where: str) -> int:
        resolved = self.resolve(arg, where)
        if not isinstance(resolved, list):
            raise TemplateError(f"{where}: Fn::Length needs a list")
        return len(resolved)

    @staticmethod
    def _list_arg(arg: Any, fn: str, where: str) -> list[Any]:
        if not isinstance(arg, list):
            raise TemplateError(f"{where}: {fn} takes a list")
        return arg

    @classmethod
    def _pair(cls, arg: Any, fn: str, where: str) -> tuple[Any, Any]:
        items = cls._list_arg(arg, fn, where)
        if len(items) != 2:
            raise TemplateError(f"{where}: {fn} takes two arguments")
        return items[0], items[1]


def _scalar_str(value: Any, where: str = "") -> str:
    """How CloudFormation writes a scalar into a string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise TemplateError(f"{where}: expected a string, got {value!r}")


def scalar_str(value: Any, where: str = "") -> str:
    """Public form of the scalar-to-string rule (used for environment variables)."""
    return _scalar_str(value, where)
