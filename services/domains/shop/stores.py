"""The shop's data as its stores hold it (``--store db``, issue 50), from the same generator
as the in-memory data (``data.py``), so a service reading its store answers byte for byte
what it answers from memory.

As in the shop's published system, each service owns its store: four collections of the
MongoDB-wire store (FerretDB) and one MySQL table (MariaDB) for shipping:

- ``products``: one document per product, ``_id`` its id, the product's fields;
- ``reviews``, ``recommendations``: one document per product, ``_id`` the product's id,
  its list under the collection's name (an empty list for a product without reviews);
- ``carts``: one document per customer 1..customers, ``_id`` the customer's id, the
  cart's ``items`` and ``total`` (a customer beyond them has an empty cart, not stored);

  each ``_id`` the id in decimal, a string (:func:`key`): FerretDB 1.24 hands a ``find`` by
  ``_id`` to its SQL backend only for a string or an ObjectId, and scans and decodes the
  whole collection in Go for a number (docs/stores.md);
- ``shipping`` (SQL): one row per option, keyed by the product's id and the option's
  position, prices as ``DECIMAL(6,2)`` (read back as the same two-decimal floats).
"""

from __future__ import annotations

from typing import Any

from ipclab_services.domains.shop import data

COLLECTIONS = ("products", "reviews", "recommendations", "carts")
SHIPPING_TABLE = "shipping"


def key(record_id: int) -> str:
    """A record's ``_id`` in its collection: its id in decimal (what every runtime's
    services look it up by)."""
    return str(int(record_id))


def documents(cfg: data.ShopConfig) -> dict[str, list[dict[str, Any]]]:
    """Every collection's documents for ``cfg``."""
    ids = range(1, cfg.catalogue_size + 1)
    customers = range(1, cfg.customers + 1)
    return {
        "products": [{"_id": key(p), **data.product(cfg, p)} for p in ids],
        "reviews": [{"_id": key(p), "reviews": data.reviews(cfg, p)} for p in ids],
        "recommendations": [
            {"_id": key(p), "recommendations": data.recommendations(cfg, p)} for p in ids
        ],
        "carts": [{"_id": key(c), **data.cart(cfg, c)} for c in customers],
    }


def _text(value: str) -> str:
    """A SQL string literal (the generator's words: letters, spaces; quotes escaped)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def shipping_sql(cfg: data.ShopConfig) -> str:
    """The shipping table, created and filled for ``cfg`` (MySQL/MariaDB dialect)."""
    rows = [
        f"({p},{i},{_text(o['carrier'])},{_text(o['method'])},{o['price']:.2f},"
        f"{o['min_days']},{o['max_days']})"
        for p in range(1, cfg.catalogue_size + 1)
        for i, o in enumerate(data.shipping(cfg, p))
    ]
    create = (
        f"CREATE TABLE {SHIPPING_TABLE} (product_id INT NOT NULL, position INT NOT NULL, "
        "carrier VARCHAR(32) NOT NULL, method VARCHAR(32) NOT NULL, price DECIMAL(6,2) NOT NULL, "
        "min_days INT NOT NULL, max_days INT NOT NULL, PRIMARY KEY (product_id, position)) "
        "ENGINE=InnoDB;\n"
    )
    inserts = "".join(
        f"INSERT INTO {SHIPPING_TABLE} VALUES {','.join(rows[at : at + 500])};\n"
        for at in range(0, len(rows), 500)
    )
    return create + inserts


def shipping_select(product_id: int) -> str:
    """The query the shipping service runs: a product's options in their order."""
    return (
        "SELECT carrier, method, price, min_days, max_days FROM "
        f"{SHIPPING_TABLE} WHERE product_id = {int(product_id)} ORDER BY position"
    )
