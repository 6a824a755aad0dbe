"""IAM's wildcard patterns: matching a value, and whether two patterns can match a common value.

A policy's ``Action``, ``Resource`` and ``*Like`` condition values are patterns where ``*``
matches any run of characters (``/`` included) and ``?`` any one character. The Service
Authorization Reference writes resource types as ARN formats with placeholders
(``arn:${Partition}:eks:${Region}:${Account}:cluster/${ClusterName}``); a placeholder stands for
one name, which has no ``/`` unless the placeholder says it is a path or an object key.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
# Placeholders whose values may contain "/": IAM names with their path (RoleNameWithPath), S3
# object keys (ObjectName), API paths (ResourcePath), an OIDC provider's name (its issuer's host
# and path: IAM's documented ARN is oidc-provider/oidc.eks.<region>.amazonaws.com/id/<id>), log
# groups and streams (CloudWatch Logs names such as /aws/sagemaker/Clusters/<name>).
_PATH_LIKE = re.compile(r"path|objectname|oidcprovidername|loggroupname|logstreamname",
                        re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def _regex(pattern: str, case_sensitive: bool) -> re.Pattern[str]:
    body = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.compile(body, re.DOTALL | (0 if case_sensitive else re.IGNORECASE))


def matches(pattern: str, value: str, *, case_sensitive: bool = True) -> bool:
    """IAM wildcard match of ``value`` against ``pattern`` (``*`` and ``?``)."""
    return _regex(pattern, case_sensitive).fullmatch(value) is not None


# ---------------------------------------------------------------------------- intersection
@dataclass(frozen=True)
class _Token:
    kind: str  # "char", "one" (any one char), "any" (any run), "name" (any run without "/")
    char: str = ""

    @property
    def is_run(self) -> bool:
        return self.kind in ("any", "name")


def _policy_tokens(pattern: str) -> tuple[_Token, ...]:
    return tuple(_Token("any") if ch == "*" else _Token("one") if ch == "?" else _Token("char", ch)
                 for ch in pattern)


@functools.lru_cache(maxsize=4096)
def format_tokens(arn_format: str) -> tuple[_Token, ...]:
    """An ARN format's tokens: its literal characters, and one run per placeholder."""
    tokens: list[_Token] = []
    position = 0
    for match in _PLACEHOLDER.finditer(arn_format):
        tokens += [_Token("char", ch) for ch in arn_format[position:match.start()]]
        tokens.append(_Token("any" if _PATH_LIKE.search(match.group(1)) else "name"))
        position = match.end()
    tokens += [_Token("char", ch) for ch in arn_format[position:]]
    return tuple(tokens)


def _absorbs(run: _Token, single: _Token) -> bool:
    """Can ``run`` produce the character ``single`` stands for?"""
    return run.kind == "any" or single.kind == "one" or single.char != "/"


def _compatible(a: _Token, b: _Token) -> bool:
    return a.kind == "one" or b.kind == "one" or a.char == b.char


def _intersect(a: tuple[_Token, ...], b: tuple[_Token, ...]) -> bool:
    seen: set[tuple[int, int]] = set()
    stack = [(0, 0)]
    while stack:
        i, j = stack.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(a) and j == len(b):
            return True
        ta = a[i] if i < len(a) else None
        tb = b[j] if j < len(b) else None
        if ta is not None and ta.is_run:
            stack.append((i + 1, j))  # the run ends here
            if tb is not None and not tb.is_run and _absorbs(ta, tb):
                stack.append((i, j + 1))
        if tb is not None and tb.is_run:
            stack.append((i, j + 1))
            if ta is not None and not ta.is_run and _absorbs(tb, ta):
                stack.append((i + 1, j))
        if (ta is not None and tb is not None and not ta.is_run and not tb.is_run
                and _compatible(ta, tb)):
            stack.append((i + 1, j + 1))
    return False


def overlaps_format(pattern: str, arn_format: str) -> bool:
    """Can a resource of the SAR's ``arn_format`` match the policy's ``pattern``?

    ``arn:aws:eks:*:*:cluster/hypd-*`` overlaps ``arn:${Partition}:eks:${Region}:${Account}:
    cluster/${ClusterName}``; ``arn:aws:s3:::data/*`` does not overlap a bucket
    (``arn:${Partition}:s3:::${BucketName}``), only an object.
    """
    return _intersect(_policy_tokens(pattern), format_tokens(arn_format))


def is_of_format(arn: str, arn_format: str) -> bool:
    """Is the concrete ``arn`` (no wildcards) a resource of ``arn_format``?"""
    return _intersect(tuple(_Token("char", ch) for ch in arn), format_tokens(arn_format))
