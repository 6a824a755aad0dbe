"""The XML protocols: ``query`` (CloudFormation, STS, IAM), ``ec2`` and ``rest-xml`` (S3).
Operations are identified and their input parsed (what IAM authorisation reads), errors are
answered (injected faults, denials); responses are moto's."""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qsl, quote, unquote_plus
from xml.etree import ElementTree
from xml.sax.saxutils import escape as xml_escape

from hypd_local.emulator.errors import AwsError
from hypd_local.emulator.protocol_base import HttpRequest, HttpResponse, Protocol, new_request_id
from hypd_local.emulator.protocol_json import _RestProtocol
from hypd_local.emulator.protocol_wire import _from_text, _wire_name

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


def _local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]  # without its namespace


def _from_xml(shape: Any, element: ElementTree.Element) -> Any:
    """The value of ``shape`` in a REST-XML request body's `element`, keyed by member names
    (lists flattened or wrapped, as botocore's serializer writes them; maps are not read)."""
    kind = shape.type_name
    if kind == "structure":
        out: dict[str, Any] = {}
        for name, member in shape.members.items():
            wire = _wire_name(member, name)
            found = [c for c in element if _local_name(c.tag) == wire]
            if member.type_name == "list" and member.serialization.get("flattened"):
                if found:
                    out[name] = [_from_xml(member.member, c) for c in found]
            elif found and member.type_name != "map":
                out[name] = _from_xml(member, found[0])
        return out
    if kind == "list":
        item = shape.member.serialization.get("name", "member")
        return [_from_xml(shape.member, c) for c in element if _local_name(c.tag) == item]
    return _from_text(shape, element.text or "")


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
        """The input members in the URI, the query string, headers and the XML body of a
        structure payload (DeleteObjects' ``Delete``: the keys IAM authorises one by one)."""
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
        payload = shape.serialization.get("payload")
        if payload and request.body and shape.members[payload].type_name == "structure":
            try:
                # The request of a client of this machine, parsed for what IAM reads of it.
                root = ElementTree.fromstring(request.body)  # noqa: S314
            except ElementTree.ParseError:
                return out  # moto answers it as S3 does (MalformedXML)
            out[payload] = _from_xml(shape.members[payload], root)
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
