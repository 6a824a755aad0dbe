"""What every protocol of `hypd_local.emulator.protocol` shares: the request and response the
protocol layer sees, and the `Protocol` base (identify, parse, serialise, errors)."""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote

from hypd_local.emulator.errors import AwsError
from hypd_local.emulator.protocol_wire import _to_json, _wire_name

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


def header_items(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Headers as WSGI wants them (latin-1 safe strings)."""
    return [(k, v.encode("latin-1", "replace").decode("latin-1")) for k, v in headers]
