"""Johansson's published set-up, copied exactly as the thesis prints it: Table 6.1 (the
servers' hardware), shown beside the reference's environment table
(:mod:`ipclab.environment_table`)."""

from __future__ import annotations

SOURCE = ("Johansson 2017, Table 6.1: The hardware specifications of the servers that the "
          "system is hosted on")  # fmt: skip

#: (field, value, source)
PUBLISHED_ENVIRONMENT: list[tuple[str, str, str]] = [
    ("Server", "Located in West Europe", SOURCE),
    ("CPU", "Intel Xenon E5-2660 @2.2 GHz, single core", SOURCE),
    ("RAM", "768 MB", SOURCE),
    ("Operation System", "Windows server 2012 R2 64-bit", SOURCE),
]

#: the reference whose results the places of ``seed_items.csv`` name by default
SEED_REFERENCE = "johansson-full-docker"
