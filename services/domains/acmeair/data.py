"""The AcmeAir stand-in's seeded data: customers, airports and flights.

Deterministic from ``IPCLAB_SEED``: the same knobs give the same records. As in IBM's
AcmeAir loader, customers are ``uid{i}@email.com`` with password ``password``; flights run
between every ordered pair of ``AIRPORTS``, ``flights_per_route`` a day, so a round-trip
``queryflights`` answers two legs of that many options (about 3.75 KB of JSON by default:
4 CoAP blocks).
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

AIRPORTS = ("AMS", "BOM", "CDG", "FRA", "HKG", "JFK", "LHR", "NRT", "OSL", "SFO", "SIN", "TRD")
PASSWORD = "password"


@dataclass(frozen=True)
class AcmeAirConfig:
    seed: int = 42
    customers: int = 200  # uid0@email.com ... uid199@email.com
    flights_per_route: int = 5

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AcmeAirConfig:
        env = os.environ if env is None else env
        cfg = cls(
            seed=int(env.get("IPCLAB_SEED", "42")),
            customers=int(env.get("IPCLAB_ACMEAIR_CUSTOMERS", "200")),
            flights_per_route=int(env.get("IPCLAB_ACMEAIR_FLIGHTS_PER_ROUTE", "5")),
        )
        if cfg.customers < 1 or cfg.flights_per_route < 1:
            raise ValueError("IPCLAB_ACMEAIR_CUSTOMERS and _FLIGHTS_PER_ROUTE must be >= 1")
        return cfg


def login_of(i: int) -> str:
    return f"uid{i}@email.com"


def customer_index(cfg: AcmeAirConfig, login: str) -> int | None:
    """The customer number of ``login``, or None when no such customer was seeded."""
    if not (login.startswith("uid") and login.endswith("@email.com")):
        return None
    digits = login[3 : -len("@email.com")]
    if not digits.isascii() or not digits.isdigit() or len(digits) > 9:
        return None
    i = int(digits)
    return i if i < cfg.customers else None


def customer(cfg: AcmeAirConfig, i: int) -> dict[str, Any]:
    """Customer ``i``'s profile as AcmeAir stores it."""
    rng = random.Random(cfg.seed * 1_000_003 + i)
    return {
        "_id": login_of(i),
        "status": "GOLD",
        "total_miles": rng.randrange(0, 1_000_000),
        "miles_ytd": rng.randrange(0, 100_000),
        "address": {
            "streetAddress1": f"{rng.randrange(1, 999)} Main St.",
            "city": "Anytown",
            "stateProvince": "NC",
            "country": "USA",
            "postalCode": f"{rng.randrange(10000, 99999)}",
        },
        "phoneNumber": f"919-{rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}",
        "phoneNumberType": "BUSINESS",
    }


def flights(cfg: AcmeAirConfig, origin: str, dest: str, date: str) -> list[dict[str, Any]]:
    """The day's flights on one route, the options a ``queryflights`` leg lists."""
    rng = random.Random(f"{cfg.seed}:{origin}:{dest}:{date}")
    segment = _segment(origin, dest)
    out = []
    for n in range(cfg.flights_per_route):
        hour = 6 + n * (16 // cfg.flights_per_route if cfg.flights_per_route <= 16 else 1)
        out.append(
            {
                "_id": f"{segment}-{date}-{n}",
                "firstClassBaseCost": 500 + rng.randrange(0, 500),
                "economyClassBaseCost": 200 + rng.randrange(0, 300),
                "numFirstClassSeats": 10,
                "numEconomyClassSeats": 200,
                "airplaneTypeId": "B747",
                "flightSegmentId": segment,
                "scheduledDepartureTime": f"{date} {hour % 24:02d}:00:00",
                "scheduledArrivalTime": f"{date} {(hour + 7) % 24:02d}:30:00",
                "flightSegment": {
                    "_id": segment,
                    "originPort": origin,
                    "destPort": dest,
                    "miles": 1000 + rng.randrange(0, 6000),
                },
            }
        )
    return out


def _segment(origin: str, dest: str) -> str:
    """A stable segment id per route (no ``hash()``: it differs between processes)."""
    a, b = AIRPORTS.index(origin), AIRPORTS.index(dest)
    return f"AA{a * len(AIRPORTS) + b:03d}"
