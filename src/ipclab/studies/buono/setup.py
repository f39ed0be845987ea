"""Buono & Petrović's published set-up (section 3.4), copied exactly as the thesis prints it:
Table 1 (software, name and version) and Table 2 (hardware), shown beside the reference's
environment table (:mod:`ipclab.environment_table`)."""

from __future__ import annotations

SOURCE_SOFTWARE = "Buono & Petrović 2021, section 3.4, Table 1 - Software specifications"
SOURCE_HARDWARE = "Buono & Petrović 2021, section 3.4, Table 2 - Hardware specifications"

#: (field, value, source)
PUBLISHED_ENVIRONMENT: list[tuple[str, str, str]] = [
    *((f, v, SOURCE_SOFTWARE) for f, v in (
        ("Operating System", "Windows 10 Pro v10.0.19042 Build 19042"),
        ("k8s cluster", "Kind v0.10.0"),
        ("Container Orchestration", "Kubernetes v1.14.0"),
        ("Java Stack", "Quarkus v1.13.3.Final"),
        ("Binary serialization format", "Protobuf v1.8.1 (camel-quarkus-protobuf)"),
        ("RESTful Framework", "RESTEasy v1.13.3.Final"),
        ("JSON Processor", "Jackson V1.13.3.Final"),
        ("Programming Language", "Java SDK v14.0.1"),
        ("Java Runtime (VM)", "GraalVM GraalVM CE 21.1.0"),
        ("JSON Compressor", "Gzip v2.3.2.Final"),
        ("Container Platform", "Docker C.19.03.9   S.19.03.8"),
        ("Dummy Data generator", "Faker V0.15"),
    )),
    *((f, v, SOURCE_HARDWARE) for f, v in (
        ("CPU", "Intel Core i9-9900K (multi-threading enabled)"),
        ("Motherboard", "MSI MPG Z390 GAMING EDGE AC"),
        ("GPU", "GeForce RTX 2080 @ 1860MHz"),
        ("Ram", "64GB @ 3600MHz"),
        ("Storage", "Samsung SSD 970 Evo Plus"),
    )),
]  # fmt: skip

#: (measured field pattern, published version, components compared): a run's version that
#: differs from the thesis's must be named, with the thesis's, in the study's deviations
#: (tests/test_environment_deviations.py)
VERSION_CHECKS: list[tuple[str, str, int]] = [
    (r"^runtime \S+ quarkus$", "1.13.3", 2),  # Java Stack: Quarkus v1.13.3.Final
    (r"^runtime \S+ jackson$", "1.13.3", 2),  # JSON Processor: Jackson V1.13.3.Final
    (r"^runtime \S+ java_version$", "14.0.1", 1),  # Programming Language: Java SDK v14.0.1
    (r"^library protobuf$", "1.8.1", 2),  # Protobuf v1.8.1 (camel-quarkus-protobuf)
    (r"^container engine$", "19.03.9", 2),  # Container Platform: Docker C.19.03.9
]

#: the reference whose results the places of ``seed_items.csv`` name by default
SEED_REFERENCE = "buono-full-docker"
