"""The protocols emulators serve: ``json`` (SageMaker) and ``rest-json`` (EKS, routed by the
method and ``http.requestUri``), with the REST routing the XML protocols share."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from hypd_local.emulator.errors import AwsError
from hypd_local.emulator.protocol_base import (
    JSON_CONTENT_TYPE,
    HttpRequest,
    HttpResponse,
    Protocol,
    new_request_id,
)
from hypd_local.emulator.protocol_wire import (
    _from_json,
    _from_text,
    _load_json_body,
    _to_json,
    _to_text,
    _wire_name,
)


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
                wire = _wire_name(member, name)
                if wire.lower() == "content-type":  # the payload's own (a blob's MIME type)
                    headers = [h for h in headers if h[0].lower() != "content-type"]
                headers.append((wire, _to_text(member, value, "rfc822")))
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
