"""Nyfløtt's published set-up, copied exactly as the thesis prints it: Table 4 (Appendix A,
servers, frameworks and versions), shown beside the reference's environment table
(:mod:`ipclab.environment_table`)."""

from __future__ import annotations

SOURCE = "Nyfløtt 2017, Appendix A, Table 4: Servers, frameworks and versions being used."

#: (field, value, source)
PUBLISHED_ENVIRONMENT: list[tuple[str, str, str]] = [
    ("nginx", "1.13.7", SOURCE),
    ("nghttp2", "1.12.0", SOURCE),
    ("Californium", "1.0.6", SOURCE),
    ("httplasyncclient", "4.1.3", SOURCE),
]

#: (measured field pattern, published version, components compared): a run's version that
#: differs from the thesis's must be named, with the thesis's, in the study's deviations
#: (tests/test_environment_deviations.py)
VERSION_CHECKS: list[tuple[str, str, int]] = [
    (r"^image \S+ nginx$", "1.13.7", 2),
    (r"^image \S+ nghttp2-proxy$", "1.12.0", 2),
    (r"^runtime \S+ californium$", "1.0.6", 2),
]

#: the reference whose results the places of ``seed_items.csv`` name by default
SEED_REFERENCE = "nyflott-full-docker"
