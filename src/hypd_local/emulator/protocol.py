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

One module per part: `protocol_base` (request, response, the `Protocol` base),
`protocol_wire` (values as the shapes say), `protocol_json` (json, rest-json and REST routing)
and `protocol_xml` (query, ec2, rest-xml); this module picks the protocol of a service model.
"""

from __future__ import annotations

from typing import Any

from hypd_local.emulator.protocol_base import (
    JSON_CONTENT_TYPE,
    HttpRequest,
    HttpResponse,
    Protocol,
    header_items,
    new_request_id,
)
from hypd_local.emulator.protocol_json import JsonProtocol, RestJsonProtocol
from hypd_local.emulator.protocol_wire import format_timestamp, parse_timestamp
from hypd_local.emulator.protocol_xml import Ec2Protocol, QueryProtocol, RestXmlProtocol

__all__ = [
    "JSON_CONTENT_TYPE", "Ec2Protocol", "HttpRequest", "HttpResponse", "JsonProtocol",
    "Protocol", "QueryProtocol", "RestJsonProtocol", "RestXmlProtocol", "format_timestamp",
    "header_items", "new_request_id", "parse_timestamp", "protocol_for",
]

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
