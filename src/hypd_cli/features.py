"""``hypd features get|set``: a cluster's managed features (docs/features.md).

``get`` reads each feature as it really is (AWS and the cluster's Kubernetes API), with the
shared prerequisite add-ons and what needs them. ``set`` is the explicit diff ``PATCH
/clusters/{tag}/features``: it sends only the features and fields given (``--enable``,
``--disable``, ``--set FEATURE.FIELD=VALUE``, or the whole body with ``--from-file``); what is
not sent is left as it is. A request that matches the cluster changes nothing (``no change``,
exit 0); any other is a set-features operation (follow it with --wait or hypd ops watch).
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Iterator, Mapping
from typing import Any

from hypd_cli.api_client import ApiError
from hypd_cli.cli import (
    EXIT_OK,
    Context,
    UsageError,
    api_command,
    body_from_flags,
    refused_with_hint,
)
from hypd_cli.operations import add_wait_flag, follow_change
from hypd_cli.output import DASH, key_values, print_json, print_table

FEATURES = (
    "trainingOperator",
    "inferenceOperator",
    "tieredCheckpointing",
    "observability",
    "taskGovernance",
)
"""The features by their API names, in the API's order (a test checks them against the API's
request model)."""
SET_FLAGS = ("enable", "disable", "set", "from_file")
VIEW_KEYS = frozenset({"enabled", "status", "version", "requires", "requiredBy", "problems"})
"""The keys of a feature's view that are not its settings."""


def kebab(name: str) -> str:
    """``trainingOperator`` -> ``training-operator``."""
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in name)


def register(subparsers: Any) -> None:
    features = subparsers.add_parser(
        "features", help="managed features (training and inference operators, tiered "
        "checkpointing, observability, task governance): get, set",
        description="HyperPod's managed features, read as they really are and changed by "
        "explicit diff: only the features and fields a request names are acted on, "
        "prerequisites first (see docs/features.md).",
    )
    commands = features.add_subparsers(dest="features_command", metavar="COMMAND")

    get = commands.add_parser(
        "get", help="each feature as it is, and the shared prerequisites "
        "(GET /clusters/{tag}/features)",
    )
    get.add_argument("tag", metavar="TAG")
    api_command(get, "features get", get_features)

    names = ", ".join(n + (f" ({kebab(n)})" if kebab(n) != n else "") for n in FEATURES)
    change = commands.add_parser(
        "set", help="turn features on or off, or change their settings; only what is given "
        "is sent (PATCH /clusters/{tag}/features)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="\n\n".join(textwrap.fill(paragraph) for paragraph in (
            "Change the features named, and nothing else: a feature or field not given is "
            "left exactly as it is (explicit diff). Read them first: hypd features get TAG.",
            "Features: " + names + ".",
            "A value of --set is JSON when it parses as JSON (20, true, "
            "'[{\"name\": \"training\", \"weight\": 50}]'), else a string (ADVANCED, a "
            "bucket name). Settings of a feature that is off need --enable with them.",
            "The inference operator keeps TLS certificates in an S3 bucket: hypd makes one for "
            "the cluster (and removes it with the operator) unless "
            "inference-operator.tls-certificate-bucket names one of yours (hyperpod-tls...), "
            "which hypd never deletes.",
        )),
        epilog="examples:\n"
        "  hypd features set demo --enable training-operator --wait\n"
        "  hypd features set demo --enable tieredCheckpointing "
        "--set tieredCheckpointing.memoryPercent=20\n"
        "  hypd features set demo --enable inference-operator --wait\n"
        "  hypd features set demo --set observability.metrics.training=ADVANCED\n"
        "  hypd features set demo --disable task-governance --wait",
    )
    change.add_argument("tag", metavar="TAG")
    change.add_argument("--enable", action="append", type=feature_name, metavar="FEATURE",
                        help="turn the feature on (repeatable)")
    change.add_argument("--disable", action="append", type=feature_name, metavar="FEATURE",
                        help="turn the feature off, removing what only it needed (repeatable)")
    change.add_argument("--set", action="append", type=setting, metavar="FEATURE.FIELD=VALUE",
                        help="one setting, e.g. tieredCheckpointing.memoryPercent=20 or "
                        "observability.metrics.training=ADVANCED (repeatable)")
    change.add_argument("--from-file", metavar="FILE",
                        help="the whole PATCH body as JSON ('-': stdin); no other of these "
                        "flags with it")
    add_wait_flag(change)
    api_command(change, "features set", set_features)


# -- get ----------------------------------------------------------------------------------------


def get_features(ctx: Context) -> int:
    response = ctx.client.get_features(ctx.args.tag)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    ctx.say(f"Features of cluster {response.get('tag') or ctx.args.tag}:")
    features: Mapping[str, Mapping[str, Any]] = response.get("features") or {}
    print_table(ctx, ("FEATURE", "ENABLED", "STATUS", "VERSION", "REQUIRED BY", "SETTINGS"),
                [feature_row(name, view) for name, view in features.items()])
    requires = [(name, listed(view["requires"])) for name, view in features.items()
                if view.get("requires")]
    if requires:
        ctx.say("\nRequires (installed first when the feature is turned on):")
        ctx.say(textwrap.indent(key_values(requires), "  "))
    problems = [(name, problem) for name, view in features.items()
                for problem in view.get("problems") or []]
    if problems:
        ctx.say("\nProblems:")
        ctx.say(textwrap.indent(key_values(problems), "  "))
    if response.get("kubernetesReadable") is False:
        ctx.say("\nThe cluster's Kubernetes API could not be read: CRDs and controllers were "
                "not checked.")
    prerequisites: Mapping[str, Mapping[str, Any]] = response.get("prerequisites") or {}
    if prerequisites:
        ctx.say("\nShared prerequisites:")
        print_table(ctx, ("ADD-ON", "INSTALLED", "STATUS", "VERSION", "INSTALLED BY",
                          "REQUIRED BY"),
                    [prerequisite_row(name, p) for name, p in prerequisites.items()])
    return EXIT_OK


def feature_row(name: str, view: Mapping[str, Any]) -> tuple[object, ...]:
    return (name, yes_no(view.get("enabled")), view.get("status") or DASH,
            view.get("version") or DASH, listed(view.get("requiredBy")), settings_text(view))


def prerequisite_row(name: str, prerequisite: Mapping[str, Any]) -> tuple[object, ...]:
    return (name, yes_no(prerequisite.get("installed")), prerequisite.get("status") or DASH,
            prerequisite.get("version") or DASH, prerequisite.get("installedBy") or DASH,
            listed(prerequisite.get("requiredBy")))


def settings_text(view: Mapping[str, Any]) -> str:
    """A feature's settings as ``field=value`` pairs (nested fields dotted), or a dash."""
    settings = {k: v for k, v in view.items() if k not in VIEW_KEYS}
    return ", ".join(f"{path}={value}" for path, value in flat(settings)) or DASH


def flat(values: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(dotted path, text) of each leaf: priority classes as ``name:weight,...``, booleans and
    lists as JSON."""
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from flat(value, path + ".")
        elif isinstance(value, list) and all(
            isinstance(v, Mapping) and set(v) == {"name", "weight"} for v in value
        ):
            yield path, ",".join(f"{v['name']}:{v['weight']}" for v in value) or "[]"
        elif isinstance(value, str):
            yield path, value
        else:
            yield path, json.dumps(value)


def yes_no(value: object) -> str:
    return DASH if value is None else "yes" if value else "no"


def listed(values: Any) -> str:
    return ", ".join(str(v) for v in values or []) or DASH


# -- set ----------------------------------------------------------------------------------------


def feature_name(text: str) -> str:
    """A feature's API name from its API name or its kebab-case alias (any case)."""
    wanted = text.replace("-", "").replace("_", "").lower()
    for name in FEATURES:
        if name.lower() == wanted:
            return name
    raise argparse.ArgumentTypeError(
        f"unknown feature {text!r}: one of {', '.join(FEATURES)} "
        "(or in kebab-case: training-operator...)"
    )


def setting(text: str) -> tuple[str, tuple[str, ...], Any]:
    """``FEATURE.FIELD[.FIELD]=VALUE`` -> (feature, fields, value): field names in camelCase
    (kebab-case accepted), the value JSON when it parses as JSON, else a string."""
    key, equals, raw = text.partition("=")
    feature, _, rest = key.partition(".")
    fields = tuple(camel(f) for f in rest.split(".")) if rest else ()
    if not equals or not fields or not all(fields):
        raise argparse.ArgumentTypeError(f"{text!r}: expected FEATURE.FIELD=VALUE")
    if fields == ("enabled",):
        raise argparse.ArgumentTypeError(f"{text!r}: use --enable or --disable")
    return feature_name(feature), fields, typed(raw)


def camel(name: str) -> str:
    """``memory-percent`` (or ``memory_percent``) -> ``memoryPercent``; camelCase stays."""
    head, *rest = name.replace("_", "-").split("-")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def typed(raw: str) -> Any:
    """A --set value: JSON (a number, true, false, a list or an object) when it parses as JSON,
    else the text itself."""
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except ValueError:
        return raw
    if value is None:
        raise argparse.ArgumentTypeError(
            "null is no value: leave the field out to keep it as it is")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN, Infinity: text, not numbers


def set_features(ctx: Context) -> int:
    tag = ctx.args.tag
    body = body_from_flags(ctx, SET_FLAGS, lambda: features_body(ctx.args))
    try:
        response = ctx.client.set_features(tag, body)
    except ApiError as exc:
        hint = refusal_hint(ctx, exc, body)
        if hint is None:
            raise
        return refused_with_hint(ctx, exc, hint)
    return follow_change(
        ctx, response,
        f"Setting features of cluster {tag} ({describe_request(body)})",
        lambda unchanged: f"features of cluster {tag} unchanged ("
        + describe_state(body, (unchanged.get("features") or {}).get("features") or {}) + ")",
    )


def refusal_hint(ctx: Context, exc: ApiError, body: Mapping[str, Any]) -> str | None:
    """What to do about the API's refusals the CLI can say more of: a setting sent for a
    feature that is off (400 naming ``feature.field``), task governance turned off while teams
    have quotas (409 naming them)."""
    tag = ctx.args.tag
    teams = exc.details.get("teams")
    if exc.status == 409 and isinstance(teams, list) and teams:
        commands = [ctx.command_line(f"teams delete {tag} {team} --wait") for team in teams]
        return "Delete the teams first: " + "; ".join(commands)
    field = exc.details.get("field")
    feature = str(field).split(".", 1)[0] if isinstance(field, str) else None
    sent = body.get(feature) if feature else None
    if exc.status == 400 and isinstance(sent, Mapping) and "enabled" not in sent:
        return f"Turn {feature} on with its settings: add --enable {feature}"
    return None


def features_body(args: argparse.Namespace) -> dict[str, Any]:
    """The PATCH body from the flags: only the features and fields given."""
    body: dict[str, dict[str, Any]] = {}
    for names, enabled in ((args.enable, True), (args.disable, False)):
        for name in names or []:
            sent = body.setdefault(name, {})
            if sent.get("enabled", enabled) != enabled:
                raise UsageError(f"{name}: both --enable and --disable")
            sent["enabled"] = enabled
    for name, fields, value in args.set or []:
        place = body.setdefault(name, {})
        for field in fields[:-1]:
            place = place.setdefault(field, {})
            if not isinstance(place, dict):
                raise UsageError(f"--set {name}.{'.'.join(fields)}: {field} is given a "
                                 "value already")
        if fields[-1] in place and place[fields[-1]] != value:
            raise UsageError(f"--set {name}.{'.'.join(fields)} is given twice")
        place[fields[-1]] = value
    if not body:
        raise UsageError("give at least one of --enable, --disable, --set (or --from-file)")
    return body


def describe_request(body: Mapping[str, Any]) -> str:
    """``trainingOperator on; tieredCheckpointing memoryPercent=20``."""
    parts = []
    for name, sent in body.items():
        if not isinstance(sent, Mapping):
            parts.append(f"{name} {json.dumps(sent)}")
            continue
        words = [] if "enabled" not in sent else ["on" if sent["enabled"] else "off"]
        words += [f"{path}={value}" for path, value in flat(
            {k: v for k, v in sent.items() if k != "enabled"})]
        parts.append(" ".join([name, *words]) if words else f"{name} as it is")
    return "; ".join(parts)


def describe_state(body: Mapping[str, Any], features: Mapping[str, Mapping[str, Any]]) -> str:
    """The named features as the API found them: ``trainingOperator on, ACTIVE``."""
    return "; ".join(
        f"{name} {'on' if view.get('enabled') else 'off'}, {view.get('status') or DASH}"
        for name in body if (view := features.get(name)) is not None
    ) or "as asked"
