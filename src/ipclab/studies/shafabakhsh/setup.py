"""Shafabakhsh's published set-up, copied exactly as the thesis prints it: Table 4.1 (the
Kubernetes cluster), shown beside the reference's environment table
(:mod:`ipclab.environment_table`)."""

from __future__ import annotations

SOURCE = ("Shafabakhsh 2020, section 4.2 (p. 28), Table 4.1: Kubernetes Cluster specification for "
          "the test system")  # fmt: skip

#: (field, value, source)
PUBLISHED_ENVIRONMENT: list[tuple[str, str, str]] = [
    ("Instance Type", "Azure DS2-v2", SOURCE),
    ("vCPU", "2", SOURCE),
    ("Memory", "7 GiB", SOURCE),
    ("Storage", "8 GiB, SSD, 6400 IOPS", SOURCE),
    ("Kubernetes Version", "1.14.8", SOURCE),
    ("Node Count", "3", SOURCE),
]

#: the reference whose results the places of ``seed_items.csv`` name by default
SEED_REFERENCE = "shafabakhsh-full-docker"
