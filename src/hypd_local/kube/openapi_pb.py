"""OpenAPI v2 in the protobuf encoding kubectl asks ``/openapi/v2`` for.

kubectl (client-go's discovery ``OpenAPISchema``) requests
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and decodes an
``openapi.v2.Document`` of gnostic's ``OpenAPIv2.proto``. This writes that message from the
JSON document (`openapi`), for the parts kube-apiserver's documents use: info, paths and their
operations (parameters: body, query and path; responses), definitions (schemas with their
types, properties, items, additionalProperties, allOf, required, enums and bounds), security,
and vendor extensions (``x-...``: a ``NamedAny`` whose value is the extension as YAML text, here
JSON, which is YAML). Proto3 rules: fields at their default value are left out.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Message = bytes


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _bytes(number: int, data: bytes) -> bytes:
    return _key(number, 2) + _varint(len(data)) + data


def _string(number: int, value: Any) -> bytes:
    return _bytes(number, str(value).encode()) if value not in (None, "") else b""


def _strings(number: int, values: Iterable[Any] | None) -> bytes:
    return b"".join(_bytes(number, str(v).encode()) for v in values or [])


def _bool(number: int, value: Any) -> bytes:
    return _key(number, 0) + _varint(1) if value else b""


def _int64(number: int, value: Any) -> bytes:
    return _key(number, 0) + _varint(int(value)) if value else b""


def _double(number: int, value: Any) -> bytes:
    return _key(number, 1) + struct.pack("<d", float(value)) if value else b""


def _message(number: int, data: bytes | None) -> bytes:
    return b"" if data is None else _bytes(number, data)


def _any(value: Any) -> bytes:
    """gnostic's Any: the value as YAML text (JSON is YAML)."""
    return _string(2, json.dumps(value))


def _named_any(name: str, value: Any) -> bytes:
    return _string(1, name) + _message(2, _any(value))


def _extensions(number: int, obj: Mapping[str, Any]) -> bytes:
    return b"".join(_message(number, _named_any(k, v)) for k, v in obj.items()
                    if k.startswith("x-"))


# --------------------------------------------------------------------------- schemas

def schema(obj: Mapping[str, Any]) -> Message:
    out = [_string(1, obj.get("$ref")), _string(2, obj.get("format")),
           _string(3, obj.get("title")), _string(4, obj.get("description"))]
    if "default" in obj:
        out.append(_message(5, _any(obj["default"])))
    out += [_double(6, obj.get("multipleOf")), _double(7, obj.get("maximum")),
            _bool(8, obj.get("exclusiveMaximum")), _double(9, obj.get("minimum")),
            _bool(10, obj.get("exclusiveMinimum")), _int64(11, obj.get("maxLength")),
            _int64(12, obj.get("minLength")), _string(13, obj.get("pattern")),
            _int64(14, obj.get("maxItems")), _int64(15, obj.get("minItems")),
            _bool(16, obj.get("uniqueItems")), _int64(17, obj.get("maxProperties")),
            _int64(18, obj.get("minProperties")), _strings(19, obj.get("required"))]
    out += [_message(20, _any(v)) for v in obj.get("enum") or []]
    additional = obj.get("additionalProperties")
    if isinstance(additional, Mapping):
        out.append(_message(21, _message(1, schema(additional))))
    elif isinstance(additional, bool):
        out.append(_message(21, _key(2, 0) + _varint(int(additional))))
    kind = obj.get("type")
    if kind:
        out.append(_message(22, _strings(1, kind if isinstance(kind, list) else [kind])))
    items = obj.get("items")
    if isinstance(items, Mapping):
        out.append(_message(23, _message(1, schema(items))))
    elif isinstance(items, list):
        out.append(_message(23, b"".join(_message(1, schema(i)) for i in items)))
    out += [_message(24, schema(s)) for s in obj.get("allOf") or []]
    properties = obj.get("properties")
    if isinstance(properties, Mapping):
        out.append(_message(25, b"".join(
            _message(1, _string(1, name) + _message(2, schema(value)))
            for name, value in properties.items())))
    out += [_string(26, obj.get("discriminator")), _bool(27, obj.get("readOnly"))]
    if "example" in obj:
        out.append(_message(30, _any(obj["example"])))
    out.append(_extensions(31, obj))
    return b"".join(out)


# --------------------------------------------------------------------------- operations

def _non_body(param: Mapping[str, Any]) -> Message:
    if param.get("in") == "path":  # PathParameterSubSchema
        inner = (_bool(1, param.get("required")) + _string(2, "path")
                 + _string(3, param.get("description")) + _string(4, param.get("name"))
                 + _string(5, param.get("type")) + _string(6, param.get("format"))
                 + _bool(19, param.get("uniqueItems")) + _extensions(22, param))
        return _message(4, inner)
    inner = (_bool(1, param.get("required")) + _string(2, param.get("in"))  # query
             + _string(3, param.get("description")) + _string(4, param.get("name"))
             + _string(6, param.get("type")) + _string(7, param.get("format"))
             + _bool(20, param.get("uniqueItems")) + _extensions(23, param))
    return _message(3, inner)


def _parameter(param: Mapping[str, Any]) -> Message:
    """A ParametersItem: a Parameter (body or not), or a JsonReference."""
    if "$ref" in param:
        return _message(2, _string(1, param["$ref"]))
    if param.get("in") == "body":
        body = (_string(1, param.get("description")) + _string(2, param.get("name"))
                + _string(3, "body") + _bool(4, param.get("required"))
                + _message(5, schema(param.get("schema") or {})) + _extensions(6, param))
        return _message(1, _message(1, body))
    return _message(1, _message(2, _non_body(param)))


def _responses(responses: Mapping[str, Any]) -> Message:
    out = []
    for code, response in responses.items():
        inner = _string(1, response.get("description"))
        if "schema" in response:
            inner += _message(2, _message(1, schema(response["schema"])))
        inner += _extensions(5, response)
        out.append(_message(1, _string(1, code) + _message(2, _message(1, inner))))
    return b"".join(out) + _extensions(2, responses)


def operation(op: Mapping[str, Any]) -> Message:
    return b"".join([
        _strings(1, op.get("tags")), _string(2, op.get("summary")),
        _string(3, op.get("description")), _string(5, op.get("operationId")),
        _strings(6, op.get("produces")), _strings(7, op.get("consumes")),
        *(_message(8, _parameter(p)) for p in op.get("parameters") or []),
        _message(9, _responses(op.get("responses") or {})), _strings(10, op.get("schemes")),
        _bool(11, op.get("deprecated")), _extensions(13, op),
    ])


_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def path_item(item: Mapping[str, Any]) -> Message:
    out = [_string(1, item.get("$ref"))]
    for method, number in _METHODS.items():
        if method in item:
            out.append(_message(number, operation(item[method])))
    out += [_message(9, _parameter(p)) for p in item.get("parameters") or []]
    out.append(_extensions(10, item))
    return b"".join(out)


# --------------------------------------------------------------------------- the document

def _named(values: Mapping[str, Any], encode: Callable[[Any], bytes]) -> bytes:
    return b"".join(_message(1, _string(1, k) + _message(2, encode(v))) for k, v in
                    values.items())


def _security_definition(item: Mapping[str, Any]) -> Message:
    api_key = (_string(1, item.get("type")) + _string(2, item.get("name"))
               + _string(3, item.get("in")) + _string(4, item.get("description"))
               + _extensions(5, item))
    return _message(2, api_key)  # SecurityDefinitionsItem.api_key_security


def _security_requirement(requirement: Mapping[str, Any]) -> Message:
    return _named(requirement, lambda scopes: _strings(1, scopes))


def encode_document(document: Mapping[str, Any]) -> bytes:
    """An ``openapi.v2.Document`` of the JSON OpenAPI v2 ``document``."""
    info = document.get("info") or {}
    paths = document.get("paths") or {}
    return b"".join([
        _string(1, document.get("swagger", "2.0")),
        _message(2, _string(1, info.get("title")) + _string(2, info.get("version"))
                 + _string(3, info.get("description")) + _extensions(7, info)),
        _string(3, document.get("host")), _string(4, document.get("basePath")),
        _strings(5, document.get("schemes")), _strings(6, document.get("consumes")),
        _strings(7, document.get("produces")),
        _message(8, _extensions(1, paths) + b"".join(
            _message(2, _string(1, path) + _message(2, path_item(item)))
            for path, item in paths.items() if not path.startswith("x-"))),
        _message(9, _named(document.get("definitions") or {}, schema)),
        *(_message(12, _security_requirement(r)) for r in document.get("security") or []),
        _message(13, _named(document.get("securityDefinitions") or {},
                            _security_definition)),
        _extensions(16, document),
    ])
