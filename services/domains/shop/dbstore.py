"""The shop's services on their stores (``--store db``, issue 50): each request reads its
record from the store the service owns, as in the shop's published system, instead of the
generator in memory. Four services read the MongoDB-wire store (FerretDB) at
``IPCLAB_MONGO_URL`` with pymongo's asyncio client, shipping reads MariaDB at
``IPCLAB_MYSQL_URL`` with aiomysql; both connect on first use (in the service's own event
loop) and keep their connections. The stores hold what ``stores.py`` seeds, so an answer
is the in-memory one, byte for byte.
"""

from __future__ import annotations

import asyncio
import os
import urllib.parse
from collections.abc import Mapping
from typing import Any

from ipclab_services.domains.shop import stores

MONGO_ENV, MYSQL_ENV = "IPCLAB_MONGO_URL", "IPCLAB_MYSQL_URL"
POOL_SIZE = 10  # MariaDB connections per shipping process (the gateway's calls in flight)
MONGO_POOL_SIZE = 100  # FerretDB connections per service process at most (pymongo's default)


class Stores:
    """The stores one service process reads (each client made on first use)."""

    def __init__(self, mongo_url: str, mysql_url: str) -> None:
        self.mongo_url, self.mysql_url = mongo_url, mysql_url
        self._mongo: Any = None
        self._pool: Any = None
        self._lock = asyncio.Lock()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Stores:
        env = os.environ if env is None else env
        return cls(env.get(MONGO_ENV, ""), env.get(MYSQL_ENV, ""))

    def _database(self) -> Any:
        if self._mongo is None:
            from pymongo import AsyncMongoClient

            if not self.mongo_url:
                raise RuntimeError(f"--store db: {MONGO_ENV} is not set")
            self._mongo = AsyncMongoClient(self.mongo_url, maxPoolSize=MONGO_POOL_SIZE)
        return self._mongo.get_default_database()

    async def document(self, collection: str, key: int) -> dict[str, Any] | None:
        """The document ``key`` of ``collection`` without its ``_id``, None if absent."""
        query = {"_id": stores.key(key)}  # a string: FerretDB looks it up by its index
        found = await self._database()[collection].find_one(query, {"_id": 0})
        return dict(found) if found is not None else None

    async def _shipping_pool(self) -> Any:
        async with self._lock:
            if self._pool is None:
                import aiomysql

                if not self.mysql_url:
                    raise RuntimeError(f"--store db: {MYSQL_ENV} is not set")
                url = urllib.parse.urlsplit(self.mysql_url)
                self._pool = await aiomysql.create_pool(
                    host=url.hostname, port=url.port, user=url.username,
                    password=urllib.parse.unquote(url.password or ""),
                    db=url.path.lstrip("/"), minsize=1, maxsize=POOL_SIZE, autocommit=True,
                )  # fmt: skip
        return self._pool

    async def shipping(self, product_id: int) -> list[dict[str, Any]]:
        """A product's shipping options in their order, prices as the generator's floats."""
        import aiomysql

        pool = await self._shipping_pool()
        async with pool.acquire() as conn, conn.cursor(aiomysql.DictCursor) as cursor:
            await cursor.execute(stores.shipping_select(product_id))
            rows = await cursor.fetchall()
        return [{**r, "price": float(r["price"])} for r in rows]
