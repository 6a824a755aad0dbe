"""Request parsing and response serialisation for botocore's protocols, driven by the models.

``json`` and ``rest-json`` are complete (requests parsed, responses and errors serialised:
emulators serve them); ``query``, ``ec2`` and ``rest-xml`` identify the operation of a request,
parse its input (what the local cloud's IAM authorisation reads: names, ARNs, tags; rest-xml
bodies are not parsed) and serialise errors, which is what injected faults and denials need.

Everything is driven by a botocore ``ServiceModel``:

- ``json`` (SageMaker): ``POST /`` with ``X-Amz-Target: <targetPrefix>.<Operation>`` and the input
  as a JSON object; the output is a JSON object; errors are ``{"__type": code, "message": ...}``
  with ``x-amzn-ErrorType`` and the error's status (400 for client errors).
- ``rest-json`` (EKS): the operation is found from the method and ``http.requestUri`` (``{label}``
  and greedy ``{label+}`` segments, static query keys); input members come from URI labels, the
  query string, headers and the JSON body (or a ``payload`` member) as their ``location`` says;
  output members go to the status code, headers and the body the same way.
- ``query`` (CloudFormation, STS, IAM) and ``ec2``: ``Action=<Operation>`` in the query string or
  the form-encoded body; errors are ``<ErrorResponse>`` / EC2's ``<Response><Errors>`` XML.
- ``rest-xml`` (S3): as rest-json for routing (plus virtual-host style buckets and required
  header / query members to tell apart operations sharing a URI); errors are ``<Error>`` XML.

Wire names are the model's ``locationName`` (``serialization["name"]``) where it has one.
Timestamps are parsed to aware UTC ``datetime`` and written as epoch seconds in JSON bodies,
ISO 8601 in query strings and RFC 822 in headers, unless the shape says ``timestampFormat``.
Blobs are base64 in JSON.

The parser is lenient about types: a value of the wrong JSON type is left as it came so that
:mod:`hypd_local.emulator.validation` reports it naming the member.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import email.utils
import functools
import json
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, unquote_plus
from xml.sax.saxutils import escape as xml_escape

from hypd_local.emulator.errors import AwsError

JSON_CONTENT_TYPE = {"json": "application/x-amz-json-1.1", "rest-json": "application/json"}


@dataclass
class HttpRequest:
    """What the protocol layer needs of an HTTP request (header names lower-cased)."""

    method: str
    path: str  # raw, still percent-encoded
    query: list[tuple[str, str]] = field(default_factory=list)  # decoded
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @classmethod
    def from_environ(cls, environ: Mapping[str, Any], body: bytes = b"") -> HttpRequest:
        """Build from a WSGI environ; ``body`` is passed in (the caller decides when to read)."""
        raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
        if raw:
            raw_path = str(raw).split("?", 1)[0]
            if "://" in raw_path:  # absolute-form request target
                raw_path = "/" + raw_path.split("://", 1)[1].partition("/")[2]
        else:
            path_info = str(environ.get("PATH_INFO", "") or "/")
            raw_path = quote(path_info.encode("latin-1").decode("utf-8", "replace"), safe="/")
        query = parse_qsl(str(environ.get("QUERY_STRING", "")), keep_blank_values=True)
        headers: dict[str, str] = {}
        for key, value in environ.items():
            if key.startswith("HTTP_"):
                headers[key[5:].replace("_", "-").lower()] = str(value)
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = str(environ["CONTENT_TYPE"])
        if environ.get("CONTENT_LENGTH"):
            headers["content-length"] = str(environ["CONTENT_LENGTH"])
        return cls(str(environ.get("REQUEST_METHOD", "GET")).upper(), raw_path or "/", query,
                   headers, body)


@dataclass
class HttpResponse:
    """An HTTP response to write back through WSGI."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None


# --- values ---------------------------------------------------------------------------------


def _timestamp_format(shape: Any, default: str) -> str:
    fmt = shape.serialization.get("timestampFormat") or shape.metadata.get("timestampFormat")
    return str(fmt) if fmt else default


def parse_timestamp(value: Any) -> Any:
    """An aware UTC datetime from epoch seconds, ISO 8601 or RFC 822; else ``value`` unchanged."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return datetime.fromtimestamp(float(text), tz=UTC)
        except (OverflowError, OSError, ValueError):
            pass
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        except ValueError:
            pass
        try:
            parsed = email.utils.parsedate_to_datetime(text)
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        except (TypeError, ValueError, IndexError):
            return value
    return value


def format_timestamp(value: Any, fmt: str) -> Any:
    """``value`` (datetime, epoch number or string) written in ``fmt``."""
    when = parse_timestamp(value)
    if not isinstance(when, datetime):
        return value
    when = when.astimezone(UTC)
    if fmt == "iso8601":
        text = when.strftime("%Y-%m-%dT%H:%M:%S")
        if when.microsecond:
            text += f".{when.microsecond // 1000:03d}"
        return text + "Z"
    if fmt == "rfc822":
        return email.utils.format_datetime(when, usegmt=True)
    seconds = calendar.timegm(when.utctimetuple())
    if when.microsecond:
        return round(seconds + when.microsecond / 1_000_000, 3)
    return seconds


def _wire_name(member_shape: Any, member_name: str) -> str:
    return str(member_shape.serialization.get("name", member_name))


def _from_json(shape: Any, value: Any) -> Any:
    """A JSON value -> Python, keyed by member names; wrong types are left as they are."""
    if value is None:
        return None
    kind = shape.type_name
    if kind == "structure":
        if getattr(shape, "is_document_type", False) or not isinstance(value, dict):
            return value
        by_wire = {_wire_name(m, n): n for n, m in shape.members.items()}
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = by_wire.get(key)
            if name is None:
                out[key] = item  # unknown: kept for validation to reject
            elif item is not None:
                out[name] = _from_json(shape.members[name], item)
        return out
    if kind == "list":
        return [_from_json(shape.member, v) for v in value] if isinstance(value, list) else value
    if kind == "map":
        if not isinstance(value, dict):
            return value
        return {k: _from_json(shape.value, v) for k, v in value.items()}
    if kind == "timestamp":
        return parse_timestamp(value)
    if kind == "blob" and isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return value
    return value


def _to_json(shape: Any, value: Any) -> Any:
    """A Python value -> JSON, keyed by wire names; ``None`` members are dropped."""
    if value is None:
        return None
    kind = shape.type_name
    if kind == "structure":
        if getattr(shape, "is_document_type", False) or not isinstance(value, Mapping):
            return value
        out: dict[str, Any] = {}
        for name, item in value.items():
            member = shape.members.get(name)
            if member is None or item is None:
                continue
            if member.serialization.get("location"):
                continue  # headers / status code / uri / querystring members are not in a body
            out[_wire_name(member, name)] = _to_json(member, item)
        return out
    if kind == "list":
        return [_to_json(shape.member, v) for v in value]
    if kind == "map":
        return {str(k): _to_json(shape.value, v) for k, v in value.items()}
    if kind == "timestamp":
        return format_timestamp(value, _timestamp_format(shape, "unixtimestamp"))
    if kind == "blob":
        raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return base64.b64encode(raw).decode("ascii")
    if kind in {"float", "double"} and not isinstance(value, bool):
        return float(value)
    if kind in {"integer", "long"} and not isinstance(value, bool):
        return int(value)
    return value


def _from_text(shape: Any, text: str, default_ts: str = "iso8601") -> Any:
    """A URI label, query or header value -> Python; unparseable text stays a string."""
    kind = shape.type_name
    if kind in {"integer", "long"}:
        try:
            return int(text)
        except ValueError:
            return text
    if kind in {"float", "double"}:
        try:
            return float(text)
        except ValueError:
            return text
    if kind == "boolean":
        return {"true": True, "false": False}.get(text.lower(), text)
    if kind == "timestamp":
        return parse_timestamp(text)
    if kind == "blob":
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return text
    if kind == "string" and shape.serialization.get("jsonvalue"):
        try:
            return json.loads(base64.b64decode(text))
        except (binascii.Error, ValueError):
            return text
    return text


def _to_text(shape: Any, value: Any, default_ts: str) -> str:
    kind = shape.type_name
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "timestamp":
        return str(format_timestamp(value, _timestamp_format(shape, default_ts)))
    if kind == "blob":
        raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return base64.b64encode(raw).decode("ascii")
    if kind == "string" and shape.serialization.get("jsonvalue"):
        return base64.b64encode(json.dumps(value).encode()).decode("ascii")
    if kind == "list":
        return ",".join(_to_text(shape.member, v, default_ts) for v in value)
    return str(value)


def _load_json_body(body: bytes) -> Any:
    if not body.strip():
        return {}
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise AwsError("Start of structure or map found where not expected." if body.strip()
                       else str(exc), code="SerializationException", status=400) from exc


# --- protocols ------------------------------------------------------------------------------


class Protocol:
    """Common part of the protocols.

    ``reads_body``: ``identify`` needs the request body (query / ec2: ``Action=`` may be in a
    form-encoded body). ``dispatchable``: ``parse`` and ``serialize`` are implemented, so an
    emulator can serve the service; the XML protocols only identify operations and answer
    errors (for injected faults).
    """

    name = ""
    reads_body = False
    dispatchable = True

    def __init__(self, service_model: Any) -> None:
        self.model = service_model
        self.operation_names: frozenset[str] = frozenset(service_model.operation_names)

    @functools.cached_property
    def operations(self) -> dict[str, Any]:
        """Operation models by name (built on first use: EC2 has hundreds)."""
        return {op: self.model.operation_model(op) for op in self.model.operation_names}

    def identify(self, request: HttpRequest) -> str | None:
        """The operation this request calls, or None if it is not one of this service's."""
        raise NotImplementedError

    def parse(self, request: HttpRequest, operation_name: str) -> dict[str, Any]:
        """The operation's input as a dict keyed by the model's member names."""
        raise NotImplementedError

    def serialize(
        self, operation_name: str, output: Mapping[str, Any] | None, request_id: str | None = None
    ) -> HttpResponse:
        """The HTTP response botocore parses into ``output``."""
        raise NotImplementedError

    def serialize_error(self, error: AwsError, request_id: str | None = None) -> HttpResponse:
        """The protocol's error response for ``error``."""
        body: dict[str, Any] = {}
        if self.name == "json":
            body["__type"] = error.code
        message_key = "message"
        declared = self._error_shape(error.code)
        if declared is not None:
            for candidate in ("message", "Message"):
                if candidate in declared.members:
                    message_key = _wire_name(declared.members[candidate], candidate)
        body[message_key] = error.message
        if message_key != "message":
            body["message"] = error.message
        for key, value in error.fields.items():
            if key not in body and value is not None:
                member = declared.members.get(key) if declared is not None else None
                body[_wire_name(member, key) if member is not None else key] = (
                    _to_json(member, value) if member is not None else value
                )
        headers = [
            ("Content-Type", JSON_CONTENT_TYPE[self.name]),
            ("x-amzn-RequestId", request_id or new_request_id()),
            ("x-amzn-ErrorType", error.code),
        ]
        return HttpResponse(error.status, headers, json.dumps(body).encode())

    def _error_shape(self, code: str) -> Any:
        for shape in self.model.error_shapes:
            if shape.name == code:
                return shape
        return None


def new_request_id() -> str:
    return str(uuid.uuid4())


class JsonProtocol(Protocol):
    """AWS JSON 1.0/1.1 (``X-Amz-Target``), e.g. SageMaker."""

    name = "json"

    def identify(self, request: HttpRequest) -> str | None:
        target = request.headers.get("x-amz-target", "")
        prefix, _, operation = target.rpartition(".")
        if (prefix != self.model.metadata.get("targetPrefix")
                or operation not in self.operation_names):
            return None
        return operation

    def parse(self, request: HttpRequest, operation_name: str) -> dict[str, Any]:
        shape = self.operations[operation_name].input_shape
        data = _load_json_body(request.body)
        if shape is None:
            return {}
        if not isinstance(data, dict):
            raise AwsError("Start of list found where not expected", code="SerializationException",
                           status=400)
        parsed = _from_json(shape, data)
        return dict(parsed)

    def serialize(
        self, operation_name: str, output: Mapping[str, Any] | None, request_id: str | None = None
    ) -> HttpResponse:
        shape = self.operations[operation_name].output_shape
        body = _to_json(shape, dict(output or {})) if shape is not None else {}
        headers = [
            ("Content-Type", JSON_CONTENT_TYPE[self.name]),
            ("x-amzn-RequestId", request_id or new_request_id()),
        ]
        return HttpResponse(200, headers, json.dumps(body or {}).encode())


@dataclass(frozen=True)
class _Route:
    operation: str
    method: str
    regex: re.Pattern[str]
    labels: tuple[str, ...]
    static_query: tuple[tuple[str, str | None], ...]
    literal_weight: int
    # required members sent in a header (lower-cased name) or the query string: they tell
    # operations with the same method and URI apart (S3: PutObject / CopyObject / UploadPart)
    required_headers: tuple[str, ...] = ()
    required_query: tuple[str, ...] = ()
    deprecated: bool = False

    def score(self, request: HttpRequest, query_keys: set[str]) -> tuple[int, bool, int, bool]:
        """Higher is a better match: literal URI text, then required members present, then
        not deprecated."""
        present = sum(1 for h in self.required_headers if h in request.headers)
        present += sum(1 for q in self.required_query if q in query_keys)
        wanted = len(self.required_headers) + len(self.required_query)
        return (self.literal_weight, present == wanted, present, not self.deprecated)


_LABEL = re.compile(r"\{([^}]+)\}")


def _compile_route(operation: str, operation_model: Any) -> _Route:
    http: Mapping[str, Any] = operation_model.http
    uri = str(http.get("requestUri", "/"))
    path, _, query = uri.partition("?")
    pattern = ""
    labels: list[str] = []
    pos = 0
    for match in _LABEL.finditer(path):
        pattern += re.escape(path[pos:match.start()])
        label = match.group(1)
        if label.endswith("+"):
            labels.append(label[:-1])
            pattern += f"(?P<l{len(labels) - 1}>.+)"
        else:
            labels.append(label)
            pattern += f"(?P<l{len(labels) - 1}>[^/]+)"
        pos = match.end()
    pattern += re.escape(path[pos:])
    static: list[tuple[str, str | None]] = []
    for item in filter(None, query.split("&")):
        key, sep, value = item.partition("=")
        static.append((key, value if sep else None))
    weight = len(_LABEL.sub("", path)) + 100 * len(static)
    headers: list[str] = []
    query_members: list[str] = []
    shape = operation_model.input_shape
    for name in shape.required_members if shape is not None else ():
        member = shape.members[name]
        location = member.serialization.get("location")
        if location == "header":
            headers.append(_wire_name(member, name).lower())
        elif location == "querystring":
            query_members.append(_wire_name(member, name))
    return _Route(operation, str(http.get("method", "POST")).upper(),
                  re.compile(pattern.rstrip("/") + "/?"), tuple(labels), tuple(static), weight,
                  tuple(headers), tuple(query_members), bool(operation_model.deprecated))


class _RestProtocol(Protocol):
    """Operations found from the method and ``http.requestUri`` (rest-json, rest-xml)."""

    def __init__(self, service_model: Any) -> None:
        super().__init__(service_model)
        self.routes = [_compile_route(op, om) for op, om in self.operations.items()]

    def _match(self, request: HttpRequest) -> tuple[_Route, dict[str, str]] | None:
        best: tuple[_Route, dict[str, str]] | None = None
        best_score: tuple[int, bool, int, bool] | None = None
        query_keys = {k for k, _ in request.query}
        query_pairs = set(request.query)
        for route in self.routes:
            if route.method != request.method:
                continue
            found = route.regex.fullmatch(request.path)
            if found is None:
                continue
            if any(
                (key not in query_keys) if value is None else ((key, value) not in query_pairs)
                for key, value in route.static_query
            ):
                continue
            score = route.score(request, query_keys)
            if best_score is None or score > best_score:
                values = {label: unquote(found.group(f"l{i}"))
                          for i, label in enumerate(route.labels)}
                best, best_score = (route, values), score
        return best

    def identify(self, request: HttpRequest) -> str | None:
        found = self._match(request)
        return found[0].operation if found else None


class RestJsonProtocol(_RestProtocol):
    """REST-JSON, e.g. EKS."""

    name = "rest-json"

    def parse(self, request: HttpRequest, operation_name: str) -> dict[str, Any]:
        operation = self.operations[operation_name]
        shape = operation.input_shape
        if shape is None:
            return {}
        found = self._match(request)
        labels = found[1] if found and found[0].operation == operation_name else {}
        route = found[0] if found else None
        static_keys = {k for k, _ in route.static_query} if route else set()
        out: dict[str, Any] = {}
        bound_query: set[str] = set(static_keys)
        for name, member in shape.members.items():
            loc = member.serialization.get("location")
            wire = _wire_name(member, name)
            if loc == "uri" and wire in labels:
                out[name] = _from_text(member, labels[wire])
            elif loc == "querystring" and member.type_name != "map":
                values = [v for k, v in request.query if k == wire]
                bound_query.add(wire)
                if not values:
                    continue
                if member.type_name == "list":
                    out[name] = [_from_text(member.member, v) for v in values]
                else:
                    out[name] = _from_text(member, values[-1])
            elif loc == "header":
                header = request.headers.get(wire.lower())
                if header is None:
                    continue
                if member.type_name == "list":
                    out[name] = [_from_text(member.member, v.strip(), "rfc822")
                                 for v in header.split(",")]
                else:
                    out[name] = _from_text(member, header, "rfc822")
            elif loc == "headers":
                prefix = wire.lower()
                found_headers = {k[len(prefix):]: v for k, v in request.headers.items()
                                 if k.startswith(prefix)}
                if found_headers:
                    out[name] = found_headers
        for name, member in shape.members.items():
            if member.serialization.get("location") == "querystring" and member.type_name == "map":
                extra: dict[str, Any] = {}
                for key, value in request.query:
                    if key in bound_query:
                        continue
                    if member.value.type_name == "list":
                        extra.setdefault(key, []).append(value)
                    else:
                        extra[key] = value
                if extra:
                    out[name] = extra
        payload = shape.serialization.get("payload")
        if payload:
            member = shape.members[payload]
            if member.type_name == "structure":
                data = _load_json_body(request.body)
                if data:
                    out[payload] = _from_json(member, data)
            elif request.body:
                out[payload] = (request.body if member.type_name == "blob"
                                else request.body.decode("utf-8"))
            return out
        body_members = [n for n, m in shape.members.items() if not m.serialization.get("location")]
        if body_members and request.body.strip():
            data = _load_json_body(request.body)
            if not isinstance(data, dict):
                raise AwsError("Start of list found where not expected",
                               code="SerializationException", status=400)
            by_wire = {_wire_name(shape.members[n], n): n for n in body_members}
            for key, value in data.items():
                name = by_wire.get(key)
                if name is None:
                    out[key] = value
                elif value is not None:
                    out[name] = _from_json(shape.members[name], value)
        return out

    def serialize(
        self, operation_name: str, output: Mapping[str, Any] | None, request_id: str | None = None
    ) -> HttpResponse:
        operation = self.operations[operation_name]
        shape = operation.output_shape
        status = int(operation.http.get("responseCode", 200))
        headers = [
            ("Content-Type", JSON_CONTENT_TYPE[self.name]),
            ("x-amzn-RequestId", request_id or new_request_id()),
        ]
        values = dict(output or {})
        if shape is None:
            return HttpResponse(status, headers, b"{}")
        for name, member in shape.members.items():
            value = values.get(name)
            if value is None:
                continue
            loc = member.serialization.get("location")
            if loc == "statusCode":
                status = int(value)
            elif loc == "header":
                headers.append((_wire_name(member, name), _to_text(member, value, "rfc822")))
            elif loc == "headers":
                prefix = _wire_name(member, name)
                headers.extend((prefix + str(k), str(v)) for k, v in value.items())
        payload = shape.serialization.get("payload")
        if payload:
            member = shape.members[payload]
            value = values.get(payload)
            if member.type_name == "structure":
                body = json.dumps(_to_json(member, value) if value is not None else {}).encode()
            elif value is None:
                body = b""
            elif isinstance(value, bytes | bytearray):
                body = bytes(value)
            else:
                body = str(value).encode("utf-8")
            return HttpResponse(status, headers, body)
        return HttpResponse(status, headers, json.dumps(_to_json(shape, values) or {}).encode())


# --- XML protocols: operations identified, errors answered (for injected faults) ------------

_ACTION = re.compile(rb"(?:^|&)Action=([^&]*)")
_FORM = "application/x-www-form-urlencoded"


def _query_key(member: Any, name: str, ec2: bool) -> str:
    if ec2:
        if "queryName" in member.serialization:
            return str(member.serialization["queryName"])
        wire = member.serialization.get("name")
        return str(wire[0].upper() + wire[1:]) if wire else name
    return _wire_name(member, name)


def _from_query(shape: Any, flat: Mapping[str, str], prefix: str, *, ec2: bool) -> Any:
    """The value of ``shape`` at ``prefix`` in a query request's flat keys (None: absent)."""
    kind = shape.type_name
    if kind == "structure":
        out: dict[str, Any] = {}
        for name, member in shape.members.items():
            key = _query_key(member, name, ec2)
            value = _from_query(member, flat, f"{prefix}.{key}" if prefix else key, ec2=ec2)
            if value is not None:
                out[name] = value
        return out if out or not prefix else None
    if kind == "list":
        if ec2 or shape.serialization.get("flattened"):
            item_prefix = prefix
        else:
            item_prefix = f"{prefix}.{shape.member.serialization.get('name', 'member')}"
        items: list[Any] = []
        while True:
            item = _from_query(shape.member, flat, f"{item_prefix}.{len(items) + 1}", ec2=ec2)
            if item is None:
                break
            items.append(item)
        if not items and flat.get(prefix) == "":  # an empty list is sent as "Name="
            return []
        return items or None
    if kind == "map":
        entry = prefix if shape.serialization.get("flattened") else f"{prefix}.entry"
        key_name = shape.key.serialization.get("name", "key")
        value_name = shape.value.serialization.get("name", "value")
        found: dict[str, Any] = {}
        index = 1
        while f"{entry}.{index}.{key_name}" in flat:
            key = flat[f"{entry}.{index}.{key_name}"]
            found[key] = _from_query(shape.value, flat, f"{entry}.{index}.{value_name}", ec2=ec2)
            index += 1
        return found or None
    if prefix not in flat:
        return None
    return _from_text(shape, flat[prefix])


def _xml_text(value: str) -> str:
    return xml_escape(value, {'"': "&quot;"})


class QueryProtocol(Protocol):
    """AWS Query (CloudFormation, STS, IAM): ``Action=<Operation>`` in the query string or the
    form-encoded body; errors are ``<ErrorResponse><Error><Type>Sender|Receiver</Type><Code>
    <Message></Error><RequestId></ErrorResponse>``."""

    name = "query"
    reads_body = True
    dispatchable = False

    def identify(self, request: HttpRequest) -> str | None:
        action = _action_of(request)
        return action if action in self.operation_names else None

    def parse(self, request: HttpRequest, operation_name: str) -> dict[str, Any]:
        """The input from the query string and the form-encoded body (``Name.member.N``
        lists, ``Name.entry.N.key`` maps; EC2: ``Name.N``), keyed by member names."""
        shape = self.operations[operation_name].input_shape
        if shape is None:
            return {}
        flat = dict(request.query)
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if request.method == "POST" and content_type in ("", _FORM) and request.body:
            flat.update(parse_qsl(request.body.decode("utf-8", "replace"),
                                  keep_blank_values=True))
        value = _from_query(shape, flat, "", ec2=self.name == "ec2")
        return value if isinstance(value, dict) else {}

    def serialize_error(self, error: AwsError, request_id: str | None = None) -> HttpResponse:
        rid = request_id or new_request_id()
        namespace = self.model.metadata.get("xmlNamespace")
        xmlns = f' xmlns="{_xml_text(str(namespace))}"' if namespace else ""
        kind = "Sender" if error.sender_fault else "Receiver"
        body = (f"<ErrorResponse{xmlns}><Error><Type>{kind}</Type>"
                f"<Code>{_xml_text(error.code)}</Code>"
                f"<Message>{_xml_text(error.message)}</Message></Error>"
                f"<RequestId>{_xml_text(rid)}</RequestId></ErrorResponse>")
        headers = [("Content-Type", "text/xml"), ("x-amzn-RequestId", rid)]
        return HttpResponse(error.status, headers, body.encode("utf-8"))


class Ec2Protocol(QueryProtocol):
    """EC2's query dialect: the same requests; errors are ``<Response><Errors><Error><Code>
    <Message></Error></Errors><RequestID></Response>``."""

    name = "ec2"

    def serialize_error(self, error: AwsError, request_id: str | None = None) -> HttpResponse:
        rid = request_id or new_request_id()
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
                f"<Code>{_xml_text(error.code)}</Code>"
                f"<Message>{_xml_text(error.message)}</Message></Error></Errors>"
                f"<RequestID>{_xml_text(rid)}</RequestID></Response>")
        headers = [("Content-Type", "text/xml;charset=UTF-8"), ("x-amzn-RequestId", rid)]
        return HttpResponse(error.status, headers, body.encode("utf-8"))


def _action_of(request: HttpRequest) -> str | None:
    for key, value in request.query:
        if key == "Action":
            return value
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if request.method != "POST" or content_type not in ("", _FORM):
        return None
    found = _ACTION.search(request.body)
    if found is None:
        return None
    return unquote_plus(found.group(1).decode("utf-8", "replace"))


# ``<bucket>.s3[.<region>].amazonaws.com`` and moto's ``<bucket>.localhost``
_VIRTUAL_HOST = re.compile(
    r"^(?P<bucket>.+?)\.(?:s3(?:[.-][a-z0-9-]+)*\.amazonaws\.com(?:\.cn)?|localhost)$")


class RestXmlProtocol(_RestProtocol):
    """REST-XML (S3): the operation from the method, the path (path style ``/bucket/key`` or
    virtual-host style ``bucket.s3.<region>.amazonaws.com/key``), the model's static query keys
    (``?list-type=2``, ``?tagging``) and required header / query members (``x-amz-copy-source``,
    ``uploadId``); errors are ``<Error><Code><Message><RequestId></Error>``. A HEAD response
    has no body: botocore then makes the code from the status (403 -> ``"403"``)."""

    name = "rest-xml"
    dispatchable = False

    @staticmethod
    def _path_style(request: HttpRequest) -> HttpRequest:
        host = request.headers.get("host", "").split(":")[0].lower()
        virtual = _VIRTUAL_HOST.match(host)
        if virtual is None:
            return request
        path = request.path if request.path != "/" else ""
        return replace(request, path="/" + quote(virtual.group("bucket"), safe="") + path)

    def identify(self, request: HttpRequest) -> str | None:
        return super().identify(self._path_style(request))

    def parse(self, request: HttpRequest, operation_name: str) -> dict[str, Any]:
        """The input members in the URI, the query string and headers (not the XML body)."""
        request = self._path_style(request)
        shape = self.operations[operation_name].input_shape
        if shape is None:
            return {}
        found = self._match(request)
        labels = found[1] if found and found[0].operation == operation_name else {}
        out: dict[str, Any] = {}
        for name, member in shape.members.items():
            location = member.serialization.get("location")
            wire = _wire_name(member, name)
            if location == "uri" and wire in labels:
                out[name] = _from_text(member, labels[wire])
            elif location == "querystring":
                values = [v for k, v in request.query if k == wire]
                if values:
                    out[name] = _from_text(member, values[-1])
            elif location == "header" and wire.lower() in request.headers:
                out[name] = _from_text(member, request.headers[wire.lower()])
        return out

    def serialize_error(self, error: AwsError, request_id: str | None = None) -> HttpResponse:
        rid = request_id or new_request_id()
        host_id = base64.b64encode(uuid.uuid4().bytes * 2).decode("ascii")
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error>'
                f"<Code>{_xml_text(error.code)}</Code>"
                f"<Message>{_xml_text(error.message)}</Message>"
                f"<RequestId>{_xml_text(rid)}</RequestId>"
                f"<HostId>{host_id}</HostId></Error>")
        headers = [("Content-Type", "application/xml"), ("x-amz-request-id", rid),
                   ("x-amz-id-2", host_id)]
        return HttpResponse(error.status, headers, body.encode("utf-8"))


_PROTOCOLS: dict[str, type[Protocol]] = {
    "json": JsonProtocol,
    "rest-json": RestJsonProtocol,
    "query": QueryProtocol,
    "ec2": Ec2Protocol,
    "rest-xml": RestXmlProtocol,
}


def protocol_for(service_model: Any) -> Protocol:
    """The protocol implementation for this service model.

    json and rest-json parse and serialize (emulators serve them); query, ec2 and rest-xml
    only identify operations and serialize errors (injected faults)."""
    protocol = str(service_model.protocol)
    if protocol not in _PROTOCOLS:
        raise ValueError(f"protocol {protocol!r} of {service_model.service_name} is not supported")
    return _PROTOCOLS[protocol](service_model)


def header_items(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Headers as WSGI wants them (latin-1 safe strings)."""
    return [(k, v.encode("latin-1", "replace").decode("latin-1")) for k, v in headers]
