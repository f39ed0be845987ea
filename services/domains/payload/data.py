"""Seeded payloads: ``Users`` (flat) and ``Payments`` (nested), built once per
(structure, count, seed).

Every element is generated from ``(seed, structure, index)`` with its own RNG, so a list of
50 starts with the list of 5, all processes agree byte for byte, and generation stays out
of any timing (``dataset`` caches what it built).

Flat, one ``User`` (proto/users.proto): ``uid`` a UUIDv4 string (36 characters), ``email``
``first.last@provider`` (~25), ``username`` ``first.last`` (~12), ``profilePictureURL`` an
avatar URL of the "uifaces" form the study's own example shows (~70), ``age`` 18-80. The
example record printed with the schema has ``age: 0``, which proto3 leaves off the wire
(2 bytes per record JSON still spends); here every age is non-zero, so both formats carry
it. One such user is ~153 bytes of protobuf and ~210 of compact JSON, as that example.

Nested, one ``Payment`` (proto/payments.proto), four levels deep as in PayPal's v1 payments
API that inspired it: ``id`` ``PAY-`` + 24 characters, ``createTime`` and ``updateTime``
ISO 8601 in UTC, ``paymentState`` APPROVED (90 %) or DECLINED, ``payer`` an e-mail address,
and ``TRANSACTIONS_PER_PAYMENT`` transactions, each with a description,
``ITEMS_PER_TRANSACTION`` items (product name, UUID sku, price 1.00-100.00 with 2 decimals,
ISO 4217 currency, quantity 1-20), a shipping address (all seven fields filled), subtotal
(the items' price x quantity), tax (8 % of it) and shipping (0.00-25.00), all rounded to
cents.

Transactions per payment and items per transaction are not given by the source of the
schema; they are fixed here, not drawn, so that a payload's size is proportional to the
count (the only size factor the experiment grid names): 2 transactions of 3 items, i.e.
every level of the nesting holds more than one element (a list of one would not exercise
``repeated`` at that level), while one payment (~1.4 kB of JSON) stays in the range of a
real payment document, so 650 payments (the largest nested count) are ~0.9 MB of JSON.

In the JSON documents enum values are their names (``"APPROVED"``), as the proto3 JSON
mapping writes them; every key is the proto field name (``profilePictureURL``,
``shippingAddress``) and the lists are wrapped as in the messages: ``{"users": [...]}``,
``{"payments": [...]}``. Documents are shared by every caller of ``dataset``: do not mutate.
"""

from __future__ import annotations

import functools
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from google.protobuf.message import Message
from ipclab_services.proto import payments_pb2, users_pb2

Structure = Literal["flat", "nested"]
STRUCTURES: tuple[Structure, ...] = ("flat", "nested")
WRAPPER = {"flat": "users", "nested": "payments"}  # the list's key in message and document

DEFAULT_SEED = 2021
MAX_COUNT = 300_000  # the largest flat count of the experiment grid
TRANSACTIONS_PER_PAYMENT = 2
ITEMS_PER_TRANSACTION = 3
TAX_RATE = 0.08

_FIRST = (
    "coleman", "vidal", "maria", "ahmed", "sofia", "lars", "yuki", "amara", "piotr", "elena",
    "jonas", "fatima", "diego", "hannah", "kwame", "ingrid", "mateo", "aisha", "oskar", "lena",
)  # fmt: skip
_LAST = (
    "balistreri", "hammes", "eriksson", "okafor", "rossi", "nakamura", "kowalski", "garcia",
    "lindqvist", "haddad", "schmidt", "moreau", "andersen", "petersen", "novak", "silva",
)  # fmt: skip
_PROVIDERS = ("yahoo.com", "gmail.com", "hotmail.com", "outlook.com", "proton.me")
_ADJECTIVES = ("Small", "Rustic", "Ergonomic", "Sleek", "Durable", "Gorgeous", "Practical")
_MATERIALS = ("Rubber", "Copper", "Steel", "Wooden", "Cotton", "Granite", "Plastic", "Wool")
_PRODUCTS = ("Watch", "Knife", "Chair", "Lamp", "Shirt", "Bottle", "Keyboard", "Table", "Hat")
_CURRENCIES = ("USD", "EUR", "SEK", "GBP", "RUB", "JPY", "CHF", "NOK")
_STREETS = ("Maple", "Oak", "Cedar", "Elm", "Birch", "Lake", "Hill", "Park")
_STREET_KINDS = ("Street", "Avenue", "Road", "Lane", "Boulevard")
_STATES = ("CA", "NY", "TX", "WA", "FL", "IL", "OR", "MA")
_COUNTRIES = ("US", "SE", "IT", "DE", "GB", "FR", "NO", "PL")
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@dataclass(frozen=True)
class Dataset:
    """``count`` elements of ``structure``: each form built on first use, then kept, so a
    process that serves one format holds only that format's objects (what the memory
    experiment measures)."""

    structure: Structure
    count: int
    seed: int

    def _elements(self) -> Iterator[dict[str, Any]]:
        make = user if self.structure == "flat" else payment
        return (make(self.seed, i) for i in range(self.count))

    @functools.cached_property
    def document(self) -> dict[str, list[dict[str, Any]]]:
        """JSON-ready: ``{"users": [...]}`` / ``{"payments": [...]}``."""
        return {WRAPPER[self.structure]: list(self._elements())}

    @functools.cached_property
    def message(self) -> Message:
        """``users_pb2.Users`` / ``payments_pb2.Payments``, the same data, built element by
        element (without the document, unless it is already built)."""
        if "document" in self.__dict__:
            return to_message(self.structure, self.document)
        if self.structure == "flat":
            return users_pb2.Users(users=[users_pb2.User(**u) for u in self._elements()])
        return payments_pb2.Payments(payments=[_payment_message(d) for d in self._elements()])


def _rng(seed: int, structure: str, index: int) -> random.Random:
    return random.Random(f"{seed}:{structure}:{index}")


def _uuid4(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _person(rng: random.Random) -> tuple[str, str]:
    return rng.choice(_FIRST), rng.choice(_LAST)


def _cents(rng: random.Random, low: float, high: float) -> float:
    return round(rng.uniform(low, high), 2)


def user(seed: int, index: int) -> dict[str, Any]:
    """The flat list's element ``index``."""
    rng = _rng(seed, "flat", index)
    first, last = _person(rng)
    handle = f"{first}{last}{rng.randrange(100)}"
    return {
        "uid": _uuid4(rng),
        "email": f"{first}.{last}@{rng.choice(_PROVIDERS)}",
        "username": f"{first}.{last}",
        "profilePictureURL": f"https://s3.amazonaws.com/uifaces/faces/twitter/{handle}/128.jpg",
        "age": rng.randint(18, 80),
    }


def _item(rng: random.Random) -> dict[str, Any]:
    return {
        "name": f"{rng.choice(_ADJECTIVES)} {rng.choice(_MATERIALS)} {rng.choice(_PRODUCTS)}",
        "sku": _uuid4(rng),
        "price": _cents(rng, 1.0, 100.0),
        "currency": rng.choice(_CURRENCIES),
        "quantity": rng.randint(1, 20),
    }


def _address(rng: random.Random) -> dict[str, Any]:
    first, last = _person(rng)
    return {
        "recipientName": f"{first.title()} {last.title()}",
        "line1": f"{rng.randint(1, 9999)} {rng.choice(_STREETS)} {rng.choice(_STREET_KINDS)}",
        "line2": f"Apt. {rng.randint(1, 999)}",
        "state": rng.choice(_STATES),
        "phone": f"+1-{rng.randint(200, 999)}-{rng.randint(200, 999)}-{rng.randint(0, 9999):04d}",
        "postalCode": f"{rng.randint(10000, 99999)}",
        "countryCode": rng.choice(_COUNTRIES),
    }


def _transaction(rng: random.Random) -> dict[str, Any]:
    items = [_item(rng) for _ in range(ITEMS_PER_TRANSACTION)]
    subtotal = round(sum(i["price"] * i["quantity"] for i in items), 2)
    return {
        "description": f"Order {rng.randint(100000, 999999)} of {len(items)} items",
        "items": items,
        "shippingAddress": _address(rng),
        "subtotal": subtotal,
        "tax": round(subtotal * TAX_RATE, 2),
        "shipping": _cents(rng, 0.0, 25.0),
    }


def _timestamp(rng: random.Random, start: int) -> tuple[int, str]:
    t = start + rng.randrange(0, 3 * 86_400)
    days, rest = divmod(t, 86_400)
    # days since 2021-01-01, kept inside one 28-day month per 4 weeks: a valid date is enough
    month, day = divmod(days % 336, 28)
    hh, rest = divmod(rest, 3600)
    mm, ss = divmod(rest, 60)
    return t, f"2021-{month + 1:02d}-{day + 1:02d}T{hh:02d}:{mm:02d}:{ss:02d}Z"


def payment(seed: int, index: int) -> dict[str, Any]:
    """The nested list's element ``index``."""
    rng = _rng(seed, "nested", index)
    created, create_time = _timestamp(rng, rng.randrange(0, 300 * 86_400))
    _, update_time = _timestamp(rng, created)
    first, last = _person(rng)
    return {
        "id": "PAY-" + "".join(rng.choices(_ALNUM, k=24)),
        "createTime": create_time,
        "updateTime": update_time,
        "paymentState": "APPROVED" if rng.random() < 0.9 else "DECLINED",
        "payer": f"{first}.{last}@{rng.choice(_PROVIDERS)}",
        "transactions": [_transaction(rng) for _ in range(TRANSACTIONS_PER_PAYMENT)],
    }


def _payment_message(d: dict[str, Any]) -> payments_pb2.Payment:
    return payments_pb2.Payment(
        id=d["id"],
        createTime=d["createTime"],
        updateTime=d["updateTime"],
        paymentState=payments_pb2.Payment.PaymentState.Value(d["paymentState"]),
        payer=d["payer"],
        transactions=[
            payments_pb2.Transaction(
                description=t["description"],
                items=[payments_pb2.Item(**i) for i in t["items"]],
                shippingAddress=payments_pb2.Address(**t["shippingAddress"]),
                subtotal=t["subtotal"],
                tax=t["tax"],
                shipping=t["shipping"],
            )
            for t in d["transactions"]
        ],
    )


def message_type(structure: Structure) -> type[Message]:
    return {"flat": users_pb2.Users, "nested": payments_pb2.Payments}[structure]


def to_message(structure: Structure, document: dict[str, list[dict[str, Any]]]) -> Message:
    """The protobuf message holding the same data as a JSON-ready ``document``."""
    elements = document[WRAPPER[structure]]
    if structure == "flat":
        return users_pb2.Users(users=[users_pb2.User(**u) for u in elements])
    return payments_pb2.Payments(payments=[_payment_message(p) for p in elements])


def check_count(structure: str, count: int) -> None:
    if structure not in STRUCTURES:
        raise ValueError(f"unknown structure {structure!r}; known: {', '.join(STRUCTURES)}")
    if not 0 <= count <= MAX_COUNT:
        raise ValueError(f"count must be in 0..{MAX_COUNT}, not {count}")


@functools.lru_cache(maxsize=16)
def dataset(structure: Structure, count: int, seed: int = DEFAULT_SEED) -> Dataset:
    """``count`` elements of ``structure`` (each form built once, when first used)."""
    check_count(structure, count)
    return Dataset(structure, count, seed)
