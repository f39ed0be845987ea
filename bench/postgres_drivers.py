"""Async PostgreSQL drivers on the bundle's tiny SELECTs: asyncpg against psycopg 3 (async).

Starts a private cluster (``ipclab.backends.postgres``), seeds the four bundle tables with
``--rows`` rows each, then, per driver, on one connection opened once (as a data service
would), runs ``select_sql(table)`` for the four tables in turn ``--queries`` times and
measures wall time and the client's CPU time (``time.process_time``) per query. Rounds
alternate the drivers (``--rounds``); medians over rounds and the spread (min-max) are
printed. The event loop is uvloop, as in the services.

    python bench/postgres_drivers.py [--rows 50] [--queries 2000] [--rounds 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import uvloop
from ipclab_services.domains.bundle import data

from ipclab.backends.postgres import PostgresCluster

RESULTS = Path(__file__).resolve().parent / "results"
Query = Callable[[str], Awaitable[list[Any]]]


async def asyncpg_session(dsn: str) -> tuple[Query, Callable[[], Awaitable[None]]]:
    import asyncpg

    conn = await asyncpg.connect(dsn)

    async def q(sql: str) -> list[Any]:
        return [dict(r) for r in await conn.fetch(sql)]

    return q, conn.close


async def psycopg_session(dsn: str) -> tuple[Query, Callable[[], Awaitable[None]]]:
    import psycopg
    from psycopg.rows import dict_row

    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True, row_factory=dict_row)
    conn.prepare_threshold = 0  # prepare at once, as asyncpg does

    async def q(sql: str) -> list[Any]:
        async with conn.cursor() as cur:
            await cur.execute(sql)
            return await cur.fetchall()

    return q, conn.close


DRIVERS = {"asyncpg": asyncpg_session, "psycopg": psycopg_session}


async def measure(name: str, dsn: str, queries: int) -> dict[str, float]:
    q, close = await DRIVERS[name](dsn)
    sqls = [data.select_sql(t) for t in data.TABLES]
    try:
        for sql in sqls * 50:  # warm-up: connection, prepared statements
            await q(sql)
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(queries):
            await q(sqls[i % len(sqls)])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        await close()
    return {"wall_us": wall / queries * 1e6, "cpu_us": cpu / queries * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path, default=RESULTS / "postgres-drivers.json")
    args = ap.parse_args()

    samples: dict[str, list[dict[str, float]]] = {d: [] for d in DRIVERS}
    with PostgresCluster() as pg:
        pg.execute(data.seed_sql(args.rows) + "ANALYZE;")
        for r in range(args.rounds):
            order = list(DRIVERS) if r % 2 == 0 else list(reversed(DRIVERS))
            for name in order:
                samples[name].append(uvloop.run(measure(name, pg.dsn, args.queries)))

    rows = []
    print(f"{args.rows} rows per table, {args.queries} queries x {args.rounds} rounds")
    print(f"{'driver':10} {'version':10} {'wall us/q':>10} {'(min-max)':>15} {'cpu us/q':>10}")
    for name, s in samples.items():
        wall = [x["wall_us"] for x in s]
        cpu = [x["cpu_us"] for x in s]
        row = {
            "driver": name,
            "version": metadata.version(name if name == "asyncpg" else "psycopg"),
            "wall_us_median": statistics.median(wall),
            "wall_us_min": min(wall),
            "wall_us_max": max(wall),
            "cpu_us_median": statistics.median(cpu),
            "cpu_us_min": min(cpu),
            "cpu_us_max": max(cpu),
        }
        rows.append(row)
        spread = f"{min(wall):.0f}-{max(wall):.0f}"
        print(
            f"{name:10} {row['version']:10} {row['wall_us_median']:10.1f} {spread:>15} "
            f"{row['cpu_us_median']:10.1f}"
        )
    base = rows[0]
    for row in rows[1:]:
        print(
            f"{row['driver']}/{base['driver']}: wall "
            f"{row['wall_us_median'] / base['wall_us_median']:.2f}x, cpu "
            f"{row['cpu_us_median'] / base['cpu_us_median']:.2f}x"
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "args": vars(args) | {"json": str(args.json)},
        "python": platform.python_version(),
        "machine": platform.machine(),
        "rows": rows,
        "samples": samples,
    }
    args.json.write_text(json.dumps(doc, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
