"""Deterministic data for the product page, identical in every style and every process.

Every record is generated on demand from ``(seed, kind, id)`` with its own seeded RNG, so
a service never needs a database file and all processes agree byte for byte.

Sizes (defaults; see ``ShopConfig``):
- catalogue: product ids 1..catalogue_size (1000); each product has name, price, description
  (~200 characters), colour and image URL;
- reviews: 0..10 per product (uniform, mean 5), each with id, customer id, rating 1-5,
  title and a body of ~150 characters;
- recommendations: 5 other products (id, name, price) per product;
- shipping: 3 options per product (carrier, method, price, min/max days);
- carts: customer ids 1..customers (500); each cart holds 0..5 items (product id, name,
  quantity 1-3, unit price) and their total; an unknown customer has an empty cart.
"""

from __future__ import annotations

import functools
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_WORDS = [
    "smart",
    "hd",
    "ultra",
    "slim",
    "wireless",
    "pro",
    "compact",
    "classic",
    "premium",
    "eco",
    "portable",
    "digital",
    "quiet",
    "fast",
    "bright",
    "solid",
    "light",
    "dual",
    "silver",
    "black",
    "walnut",
    "steel",
    "cotton",
    "modular",
]
_NOUNS = [
    "tv",
    "speaker",
    "lamp",
    "chair",
    "kettle",
    "camera",
    "monitor",
    "router",
    "backpack",
    "watch",
    "desk",
    "blender",
]
_COLOURS = ("black", "white", "silver", "red", "blue", "green", "walnut", "grey")
_CARRIERS = (
    ("PostNord", "standard"),
    ("DHL", "express"),
    ("UPS", "economy"),
    ("Bring", "home delivery"),
    ("Budbee", "evening"),
)


@dataclass(frozen=True)
class ShopConfig:
    seed: int = 42
    catalogue_size: int = 1000
    customers: int = 500
    max_reviews: int = 10
    recommendations: int = 5
    shipping_options: int = 3
    max_cart_items: int = 5

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ShopConfig:
        env = os.environ if env is None else env
        return cls(
            seed=int(env.get("IPCLAB_SEED", "42")),
            catalogue_size=int(env.get("IPCLAB_CATALOGUE_SIZE", "1000")),
            customers=int(env.get("IPCLAB_CUSTOMERS", "500")),
        )


def _rng(cfg: ShopConfig, kind: str, key: int) -> random.Random:
    return random.Random(f"{cfg.seed}:{kind}:{key}")


def _sentence(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(_WORDS))
    return " ".join(words).capitalize() + "."


def _price(rng: random.Random) -> float:
    return round(rng.uniform(5, 900), 2)


def exists(cfg: ShopConfig, product_id: int) -> bool:
    return 1 <= product_id <= cfg.catalogue_size


@functools.lru_cache(maxsize=4096)
def product(cfg: ShopConfig, product_id: int) -> dict[str, Any]:
    rng = _rng(cfg, "product", product_id)
    name = f"{rng.choice(_WORDS).capitalize()} {rng.choice(_WORDS)} {rng.choice(_NOUNS)}"
    return {
        "product_id": product_id,
        "name": name,
        "price": _price(rng),
        "description": _sentence(rng, 200),
        "color": rng.choice(_COLOURS),
        "image_url": f"https://img.example/{product_id}.jpg",
    }


@functools.lru_cache(maxsize=4096)
def reviews(cfg: ShopConfig, product_id: int) -> list[dict[str, Any]]:
    rng = _rng(cfg, "reviews", product_id)
    return [
        {
            "review_id": product_id * 100 + i,
            "customer_id": rng.randint(1, cfg.customers),
            "rating": rng.randint(1, 5),
            "title": _sentence(rng, 25),
            "body": _sentence(rng, 150),
        }
        for i in range(rng.randint(0, cfg.max_reviews))
    ]


@functools.lru_cache(maxsize=4096)
def recommendations(cfg: ShopConfig, product_id: int) -> list[dict[str, Any]]:
    rng = _rng(cfg, "recommendations", product_id)
    others = [
        p
        for p in rng.sample(range(1, cfg.catalogue_size + 1), cfg.recommendations + 1)
        if p != product_id
    ][: cfg.recommendations]
    out = []
    for pid in others:
        p = product(cfg, pid)
        out.append({"product_id": pid, "name": p["name"], "price": p["price"]})
    return out


@functools.lru_cache(maxsize=4096)
def shipping(cfg: ShopConfig, product_id: int) -> list[dict[str, Any]]:
    rng = _rng(cfg, "shipping", product_id)
    out = []
    for carrier, method in rng.sample(_CARRIERS, cfg.shipping_options):
        low = rng.randint(1, 5)
        out.append(
            {
                "carrier": carrier,
                "method": method,
                "price": round(rng.uniform(0, 20), 2),
                "min_days": low,
                "max_days": low + rng.randint(0, 4),
            }
        )
    return out


@functools.lru_cache(maxsize=4096)
def cart(cfg: ShopConfig, customer_id: int) -> dict[str, Any]:
    items = []
    if 1 <= customer_id <= cfg.customers:
        rng = _rng(cfg, "cart", customer_id)
        for pid in rng.sample(range(1, cfg.catalogue_size + 1), rng.randint(0, cfg.max_cart_items)):
            p = product(cfg, pid)
            items.append(
                {
                    "product_id": pid,
                    "name": p["name"],
                    "quantity": rng.randint(1, 3),
                    "unit_price": p["price"],
                }
            )
    total = round(float(sum(i["quantity"] * i["unit_price"] for i in items)), 2)
    return {"customer_id": customer_id, "items": items, "total": total}


def fixture(cfg: ShopConfig) -> dict[str, Any]:
    """Every record for ``cfg``, for roles written in other languages (they load this instead
    of reimplementing Python's RNG): lists indexed by id - 1; a customer beyond ``customers``
    has an empty cart, customer 0 none."""
    ids = range(1, cfg.catalogue_size + 1)
    return {
        "seed": cfg.seed,
        "catalogue_size": cfg.catalogue_size,
        "customers": cfg.customers,
        "products": [product(cfg, p) for p in ids],
        "reviews": [reviews(cfg, p) for p in ids],
        "recommendations": [recommendations(cfg, p) for p in ids],
        "shipping": [shipping(cfg, p) for p in ids],
        "carts": [cart(cfg, c) for c in range(1, cfg.customers + 1)],
    }
