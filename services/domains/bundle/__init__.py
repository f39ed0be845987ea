"""The data bundle: four data-only services (person, animal, car, building), each reading
its own table of two CHAR(6) columns from a SQL database, and a gateway that answers the
whole bundle over REST (``/api/Databundle/`` and one route per service) or GraphQL (one
query with four fields; see ``graphql_schema``). Rows per table: ``IPCLAB_BUNDLE_ROWS``."""

from __future__ import annotations

import os

from ipclab_services.domains import worst_error
from ipclab_services.domains.bundle import data
from ipclab_services.domains.bundle.gateway import graphql_schema
from ipclab_services.domains.bundle.gateway import handler as gateway_handler
from ipclab_services.domains.bundle.services import build_services

SERVICES = tuple(data.TABLES)
__all__ = [
    "SERVICES",
    "build_services",
    "database_sql",
    "gateway_handler",
    "graphql_schema",
    "worst_error",
]


def database_sql(env: dict[str, str] | None = None) -> str:
    """The SQL that creates and fills the domain's tables, for ``IPCLAB_BUNDLE_ROWS`` rows
    (default 5) and ``IPCLAB_SEED`` (default the data module's)."""
    env = dict(os.environ if env is None else env)
    rows = int(env.get("IPCLAB_BUNDLE_ROWS", "5"))
    seed = int(env.get("IPCLAB_BUNDLE_SEED", str(data.DEFAULT_SEED)))
    return data.seed_sql(rows, seed)
