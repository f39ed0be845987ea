"""The four data services: each answers ``get`` with every row of its table (read from the
database at ``IPCLAB_DATABASE_URL`` on every call, as the thesis's services queried SQL)
and ``ping`` once the database answers."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from ipclab_services.domains.bundle import data
from ipclab_services.errors import Unavailable
from ipclab_services.proto import bundle_pb2 as pb
from ipclab_services.transports.base import Operation, ServiceDef

POOL_SIZE = 10
_MESSAGES = {
    "person": (pb.Person, pb.Persons),
    "animal": (pb.Animal, pb.Animals),
    "car": (pb.Car, pb.Cars),
    "building": (pb.Building, pb.Buildings),
}


class Database:
    """One connection pool per process, opened on first use."""

    def __init__(self, url: str):
        self.url = url
        self._pool: Any = None
        self._lock = asyncio.Lock()

    async def pool(self) -> Any:
        if self._pool is None:
            import asyncpg

            async with self._lock:
                if self._pool is None:
                    try:
                        self._pool = await asyncpg.create_pool(
                            self.url, min_size=1, max_size=POOL_SIZE
                        )
                    except (OSError, asyncpg.PostgresError) as e:
                        raise Unavailable(f"database: {type(e).__name__}") from None
        return self._pool

    async def rows(self, table: str) -> list[dict[str, str]]:
        pool = await self.pool()
        records = await pool.fetch(data.select_sql(table))
        return [dict(r) for r in records]

    async def ping(self) -> None:
        pool = await self.pool()
        await pool.fetchval("SELECT 1")


def build_services(url: str | None = None) -> dict[str, ServiceDef]:
    """Role name -> service definition for the four data services."""
    db = Database(url or os.environ.get("IPCLAB_DATABASE_URL", ""))

    def service(table: str) -> ServiceDef:
        _, rows_cls = _MESSAGES[table]

        async def get(_: dict[str, Any]) -> dict[str, Any]:
            return {"rows": await db.rows(table)}

        async def ping(_: dict[str, Any]) -> dict[str, Any]:
            await db.ping()
            return {}

        return ServiceDef(
            table,
            f"ipclab.bundle.{table.capitalize()}Service",
            {
                "get": Operation(get, pb.Empty, rows_cls),
                "ping": Operation(ping, pb.Empty, pb.Empty),
            },
        )

    return {t: service(t) for t in data.TABLES}
