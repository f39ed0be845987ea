"""Deterministic rows for the bundle domain's four tables, and the SQL that creates them.

Four tables of two ``CHAR(6)`` columns each (every value exactly 6 characters, so a
response's size depends only on the row count):

=========  ===========  ==============
table      column 1     column 2
=========  ===========  ==============
person     id           name
animal     type         name
car        model        color
building   address      department
=========  ===========  ==============

``rows(table, n, seed)`` gives the first ``n`` rows of a table; row ``i`` depends only on
``(seed, table, i)``, so a smaller table is a prefix of a larger one and every process (a
seeding harness, a data service, a benchmark) agrees byte for byte. ``person.id`` is the
row number, zero-padded (``000001``); every other value is 6 lowercase letters drawn from
a per-row RNG seeded with a string (``random.Random`` hashes strings with SHA-512, so the
draw does not depend on ``PYTHONHASHSEED``).

``schema_sql()`` and ``seed_sql(n, seed)`` give plain SQL (PostgreSQL dialect, also valid
for most others) that drops, creates and fills the tables; ``bundle(n, seed)`` gives the
same data as a dict of lists of dicts, the shape both gateways return.

This module imports nothing outside the standard library.
"""

from __future__ import annotations

import random
import string
from typing import Final

WIDTH: Final = 6
DEFAULT_SEED: Final = 2017
TABLES: Final[dict[str, tuple[str, str]]] = {
    "person": ("id", "name"),
    "animal": ("type", "name"),
    "car": ("model", "color"),
    "building": ("address", "department"),
}

Row = dict[str, str]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(WIDTH))


def row(table: str, i: int, seed: int = DEFAULT_SEED) -> Row:
    """Row ``i`` (1-based) of ``table``."""
    first, second = TABLES[table]
    rng = random.Random(f"{seed}:{table}:{i}")
    a = f"{i:0{WIDTH}d}" if (table, first) == ("person", "id") else _word(rng)
    return {first: a, second: _word(rng)}


def rows(table: str, n: int, seed: int = DEFAULT_SEED) -> list[Row]:
    """The first ``n`` rows of ``table`` (``n`` < 10**6, so ids fit in 6 digits)."""
    if not 0 <= n < 10**WIDTH:
        raise ValueError(f"rows per table must be in 0..{10**WIDTH - 1}, got {n}")
    return [row(table, i, seed) for i in range(1, n + 1)]


def bundle(n: int, seed: int = DEFAULT_SEED) -> dict[str, list[Row]]:
    """All four tables, ``n`` rows each, in the order of ``TABLES``."""
    return {table: rows(table, n, seed) for table in TABLES}


def schema_sql() -> str:
    """Drop and create the four tables (no key: the thesis's tables have none)."""
    out = []
    for table, (a, b) in TABLES.items():
        out.append(f"DROP TABLE IF EXISTS {table};")
        cols = f'"{a}" CHAR({WIDTH}) NOT NULL, "{b}" CHAR({WIDTH}) NOT NULL'
        out.append(f"CREATE TABLE {table} ({cols});")
    return "\n".join(out) + "\n"


def seed_sql(n: int, seed: int = DEFAULT_SEED) -> str:
    """``schema_sql()`` plus one INSERT per table with its ``n`` rows, in one transaction.
    Values are lowercase letters and digits only, so plain quoting is safe."""
    out = ["BEGIN;", schema_sql()]
    for table, (a, b) in TABLES.items():
        values = rows(table, n, seed)
        if values:
            tuples = ",\n".join(f"('{r[a]}', '{r[b]}')" for r in values)
            out.append(f'INSERT INTO {table} ("{a}", "{b}") VALUES\n{tuples};')
    out.append("COMMIT;")
    return "\n".join(out) + "\n"


def select_sql(table: str) -> str:
    """The query a data service runs: every row, ordered by both columns (SQL promises no
    order otherwise), so the result equals ``sorted_rows(table, n)``."""
    a, b = TABLES[table]
    return f'SELECT "{a}", "{b}" FROM {table} ORDER BY "{a}", "{b}"'


def sorted_rows(table: str, n: int, seed: int = DEFAULT_SEED) -> list[Row]:
    """``rows(table, n, seed)`` in the order ``select_sql(table)`` returns them."""
    a, b = TABLES[table]
    return sorted(rows(table, n, seed), key=lambda r: (r[a], r[b]))
