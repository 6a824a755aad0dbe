"""A request's field errors in a user's words: pydantic's messages ("String should match
pattern '^...$'", "Input should be a valid integer", "Field required", "Value error, ...")
become what is allowed ("must be letters, digits and hyphens ..."), never a regular
expression or a library's prefix. Each pattern the API validates with has its words here;
tests/unit/test_api_field_messages.py checks that every pattern of the OpenAPI document does.
"""

from __future__ import annotations

from typing import Any

_LETTERS_DIGITS_HYPHENS = "letters, digits and hyphens, starting and ending with a letter or digit"
_DNS_LABEL = ("lowercase letters, digits and hyphens, starting and ending with a letter or "
              "digit (a Kubernetes name)")

PATTERN_WORDS: dict[str, str] = {
    r"^(Never|([0-9]+(s|m|h))+)$": "Never, or a duration in s, m and h (90s, 5m, 1h30m)",
    r"^/[^:]*$": "an absolute path (starting with /) without ':'",
    r"^[!-~]([ -~]*[!-~])?$": "printable ASCII, not starting or ending with a space",
    r"^[0-9]+\.[0-9]+$": "a Kubernetes version such as 1.33",
    r"^[A-Za-z0-9/_.-]{1,256}$": "up to 256 letters, digits, '/', '_', '.' and '-'",
    r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$": (
        "letters, digits, '-', '_' and '.', starting and ending with a letter or digit (a "
        "Kubernetes label value)"),
    r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$": _LETTERS_DIGITS_HYPHENS,
    r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$": (
        "up to 100 letters, digits, '_' and '-', starting with a letter or digit"),
    r"^[^/].*/$": "a prefix that does not start with / and ends with / (data/train/)",
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": _DNS_LABEL,
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}?$": _DNS_LABEL + ", at most 40 characters",
    r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$": (
        "an S3 bucket name: 3 to 63 lowercase letters, digits, '.' and '-', starting and "
        "ending with a letter or digit"),
    r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$": (
        "up to 63 " + _LETTERS_DIGITS_HYPHENS + " (a HyperPod instance group name)"),
    r"^[a-z]{2}(-[a-z]+)+-\d+[a-z]$": "an Availability Zone name such as us-west-2a",
    r"^\d{1,4}\.\d{1,4}\.\d{1,4}$": "a version such as 1.2.3",
    (r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})"
     r"(#[A-Za-z0-9#|:._+-]{1,400})?$"): (
        "an ISO time such as 2026-01-15T10:00:00Z (or the cursor a page's next gave)"),
    r"^arn:aws[a-z-]*:aps:[a-z0-9-]+:\d{12}:workspace/ws-[a-zA-Z0-9-]+$": (
        "an Amazon Managed Prometheus workspace ARN (arn:aws:aps:REGION:ACCOUNT:workspace/"
        "ws-...)"),
    r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.+$": (
        "a SageMaker training plan ARN (arn:aws:sagemaker:REGION:ACCOUNT:training-plan/NAME)"),
    r"^fs-[0-9a-f]{8,21}$": "an FSx file system id such as fs-0123456789abcdef0",
    r"^hyperpod-tls[a-z0-9.-]{0,50}[a-z0-9]$": (
        "an S3 bucket name starting with hyperpod-tls (the inference operator reads only those)"),
    r"^i-[a-f0-9]{8}(?:[a-f0-9]{9})?$": "a node id such as i-0123456789abcdef0",
    r"^ml\.[a-z0-9-]+\.[a-z0-9]+$": "a SageMaker instance type such as ml.g6.4xlarge",
    r"^ml\.[a-z0-9]+\.[a-z0-9]+$": "a SageMaker instance type such as ml.g6.4xlarge",
    r"^op-[0-9a-f]{32}$": "an operation id such as op-0123456789abcdef0123456789abcdef",
}

_SHOULD_BE = "Input should be "


def field_message(error: dict[str, Any]) -> str:
    """One pydantic error (``type``, ``msg``, ``ctx``) as what the field must be."""
    kind = str(error.get("type") or "")
    context = error.get("ctx") or {}
    message = str(error.get("msg") or "is not valid")
    if kind == "string_pattern_mismatch":
        return "must be " + PATTERN_WORDS.get(str(context.get("pattern")),
                                              "in the format the API reference gives")
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":  # hypd's own (an unknown query parameter) names the known
        return ("is not a field of this request" if message == "Extra inputs are not permitted"
                else message)
    bounds = {"greater_than_equal": ("ge", "must be {} or more"),
              "less_than_equal": ("le", "must be {} or less"),
              "greater_than": ("gt", "must be more than {}"),
              "less_than": ("lt", "must be less than {}")}
    if kind in bounds and bounds[kind][0] in context:
        key, words = bounds[kind]
        return words.format(context[key])
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "must be a whole number"
    if kind in ("string_too_long", "too_long") and "max_length" in context:
        return f"must be at most {context['max_length']} characters" if kind.startswith(
            "string") else f"must have at most {context['max_length']} items"
    if kind in ("string_too_short", "too_short") and "min_length" in context:
        return f"must be at least {context['min_length']} characters" if kind.startswith(
            "string") else f"must have at least {context['min_length']} items"
    if kind == "value_error" and message.startswith("Value error, "):
        return message.removeprefix("Value error, ")
    if message.startswith(_SHOULD_BE):
        return "must be " + message.removeprefix(_SHOULD_BE)
    return message
