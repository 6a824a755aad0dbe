"""Each function's services, built from its settings: the one place stores and clients are
assembled. Every `functions/*/app.py` is its settings model, one call here and its handler.

One module per function (`wiring.api`, `wiring.create`, ...), so a function's package closure
holds only what it runs: the API function does not carry the pipelines' task modules, and
`tests/build/test_sam_build.py` checks every function's imports resolve in its artefact.
Clients are created on first use (`lazy_client`, `regional_clients`, `service_client`), so a
cold start pays only for the ones its first request needs and no init holds a client (or its
credentials); the stores share one table client per function.
"""

from __future__ import annotations

from hypd.aws.clients import service_client
from hypd.aws.dynamodb import Table
from hypd.config import FunctionSettings


def table(settings: FunctionSettings) -> Table:
    """The function's DynamoDB table (one client, shared by its stores, made on first use)."""
    return Table(service_client("dynamodb", settings.region), settings.table_name)
