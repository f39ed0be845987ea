"""The shop: a product page merged from five services (product info, reviews,
recommendations, shipping, cart) over seeded data. See ``data.py`` for sizes."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipclab_services.domains.shop import data, dbstore, services, stores
from ipclab_services.domains.shop.gateway import handler as gateway_handler
from ipclab_services.transports.base import ServiceDef

STORE_ENV = "IPCLAB_STORE"  # "db": the services read their stores (--store db)
SERVICES = ("product-info", "reviews", "recommendations", "shipping", "cart")
__all__ = [
    "SERVICES",
    "build_services",
    "gateway_handler",
    "store_documents",
    "store_sql",
    "write_fixture",
]


def build_services() -> dict[str, ServiceDef]:
    """The five services, on the data the environment's seed and sizes give: in memory, or
    read from their stores with ``IPCLAB_STORE=db`` (``--store db``)."""
    db = dbstore.Stores.from_env() if os.environ.get(STORE_ENV) == "db" else None
    return services.build(data.ShopConfig.from_env(), db)


def write_fixture(path: Path, env: Mapping[str, str]) -> None:
    """Write the data the environment's seed and sizes give as one JSON file, for roles
    built in other languages (``IPCLAB_FIXTURE``); deterministic: same knobs, same bytes."""
    cfg = data.ShopConfig.from_env(env)
    text = json.dumps(data.fixture(cfg), separators=(",", ":"), ensure_ascii=False)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def store_documents(env: Mapping[str, str]) -> dict[str, list[dict[str, Any]]]:
    """The MongoDB-wire store's collections for the environment's seed and sizes (the
    ``ferretdb`` infrastructure seeds itself with them)."""
    return stores.documents(data.ShopConfig.from_env(env))


def store_sql(env: Mapping[str, str]) -> str:
    """The SQL store's shipping table for the environment's seed and sizes (the ``mariadb``
    infrastructure runs it)."""
    return stores.shipping_sql(data.ShopConfig.from_env(env))
