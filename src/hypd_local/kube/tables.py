"""Server-side printing: ``meta.k8s.io/v1`` Tables, as ``kubectl get`` asks for them.

kubectl sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...`` and prints the
columns the server defines: a column with ``priority`` 0 always, the others with ``-o wide``.
Each row has its ``cells`` and an ``object`` (``includeObject``: ``Metadata``, the default, a
``PartialObjectMetadata``; ``Object``, the whole object, for ``--sort-by``; ``None``).

Columns are the API server's for the built-in types it prints (nodes, pods, namespaces,
services, workloads, storage...; ages are computed by the server, on its clock), the default
table (Name, Created At) for the others, and for custom resources Name plus the CRD version's
``additionalPrinterColumns`` (Name and Age when it defines none), evaluated by `jsonpath`.

The built-in kinds' printers are in `printers`, what their cells are made of in `table_cells`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hypd_local.kube.errors import KubeError, bad_request
from hypd_local.kube.jsonpath import JsonPathError, find
from hypd_local.kube.printers import DEFAULT_PRINTER, PRINTERS, pod_phase
from hypd_local.kube.resources import ResourceType
from hypd_local.kube.table_cells import (
    AGE,
    NAME,
    Column,
    Obj,
    Printer,
    _meta,
    _parse_time,
    _status,
    age,
    human_duration,
)

__all__ = [
    "INCLUDE_OBJECT", "META_GROUP", "PRINTERS", "Column", "Printer", "Target", "age",
    "crd_printer", "human_duration", "include_object", "negotiate", "partial_metadata",
    "partial_metadata_list", "pod_phase", "printer_for", "to_table",
]

META_GROUP = "meta.k8s.io"

INCLUDE_OBJECT = ("None", "Metadata", "Object")


@dataclass(frozen=True)
class Target:
    """What a request's ``Accept`` asks the object to be turned into: ``kind`` None (the object
    itself), ``Table``, ``PartialObjectMetadata`` or ``PartialObjectMetadataList``."""

    kind: str | None = None
    version: str = "v1"

    @property
    def api_version(self) -> str:
        return f"{META_GROUP}/{self.version}"

_AS_KINDS = ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")

_JSON_TYPES = ("application/json", "application/*", "*/*")


def negotiate(accept: str | None) -> Target:
    """The first media type of ``Accept`` the server can produce (JSON, possibly as a Table or
    as partial object metadata); 406 when it lists only others (protobuf, CBOR...)."""
    if not accept or not accept.strip():
        return Target()
    for item in accept.split(","):
        media, *raw_params = (part.strip() for part in item.split(";"))
        params = dict(p.split("=", 1) for p in raw_params if "=" in p)
        if media.lower() not in _JSON_TYPES:
            continue
        as_kind = params.get("as")
        if as_kind is None:
            return Target()
        if (as_kind in _AS_KINDS and params.get("g") == META_GROUP
                and params.get("v") in ("v1", "v1beta1")):
            return Target(as_kind, params["v"])
    raise KubeError(406, "NotAcceptable",
                    "only the following media types are accepted: application/json, "
                    "application/json;as=Table;v=v1;g=meta.k8s.io, "
                    "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")


def include_object(args: Mapping[str, str]) -> str:
    value = args.get("includeObject") or "Metadata"
    if value not in INCLUDE_OBJECT:
        raise bad_request(f'Unable to convert to Table as requested: includeObject: Unsupported '
                          f'value: "{value}": supported values: "None", "Metadata", "Object"')
    return value


def partial_metadata(obj: Obj, target: Target) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": target.api_version,
            "metadata": dict(obj.get("metadata") or {})}


def partial_metadata_list(items: Iterable[Obj], list_metadata: Obj, target: Target
                          ) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadataList", "apiVersion": target.api_version,
            "metadata": dict(list_metadata),
            "items": [partial_metadata(item, target) for item in items]}


def _cell(column: Mapping[str, Any], obj: Obj, now: datetime) -> Any:
    try:
        values = find(obj, str(column.get("jsonPath", "")))
    except JsonPathError:
        return None
    if not values or values[0] is None:
        return None
    value, kind = values[0], column.get("type", "string")
    if kind == "string":
        if isinstance(value, str):
            return value
        return json.dumps(value) if isinstance(value, (dict, list, bool)) else str(value)
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "integer":
        return int(value) if numeric else None
    if kind == "number":
        return value if numeric else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date":
        return age(value, now) if _parse_time(value) else "<invalid>"
    return None


def crd_printer(crd_version: Mapping[str, Any] | None) -> Printer:
    """Name plus the version's additionalPrinterColumns (Age when it defines none)."""
    defined = list((crd_version or {}).get("additionalPrinterColumns") or [])
    if not defined:
        defined = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
                    "description": AGE.description}]
    columns = (NAME, *(
        Column(str(c["name"]), type=str(c.get("type", "string")),
               description=str(c.get("description") or "Custom resource definition column (in "
                               f"JSONPath format): {c.get('jsonPath', '')}"),
               priority=int(c.get("priority") or 0), format=str(c.get("format") or ""))
        for c in defined))

    def cells(obj: Obj, now: datetime) -> list[Any]:
        return [_meta(obj).get("name"), *(_cell(c, obj, now) for c in defined)]

    return Printer(columns, cells)


def printer_for(rtype: ResourceType, crd_version: Mapping[str, Any] | None) -> Printer:
    if rtype.crd:
        return crd_printer(crd_version)
    return PRINTERS.get((rtype.group, rtype.plural), DEFAULT_PRINTER)


def _row(printer: Printer, obj: Obj, now: datetime, include: str, target: Target,
         rtype: ResourceType) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": printer.cells(obj, now)}
    if include == "Object":
        row["object"] = dict(obj)
    elif include == "Metadata":
        row["object"] = partial_metadata(obj, target)
    if rtype.group == "" and rtype.plural == "pods":
        phase = _status(obj).get("phase")
        if phase in ("Succeeded", "Failed"):
            row["conditions"] = [{"type": "Completed", "status": "True", "reason": phase,
                                  "message": f"The pod has completed {phase.lower()}"}]
    return row


def to_table(rtype: ResourceType, objects: Iterable[Obj], now: datetime, target: Target, *,
             include: str = "Metadata", crd_version: Mapping[str, Any] | None = None,
             list_metadata: Mapping[str, Any] | None = None, headers: bool = True
             ) -> dict[str, Any]:
    """A Table of ``objects`` (``headers``: with the column definitions, which a watch sends
    only in its first event)."""
    printer = printer_for(rtype, crd_version)
    moment = now.astimezone(UTC)
    table: dict[str, Any] = {"kind": "Table", "apiVersion": target.api_version,
                             "metadata": dict(list_metadata or {})}
    table["columnDefinitions"] = [c.definition() for c in printer.columns] if headers else None
    table["rows"] = [_row(printer, obj, moment, include, target, rtype) for obj in objects]
    return table
