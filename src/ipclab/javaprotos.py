"""The .proto files the Java projects compile, made from the one source every runtime reads
(``services/proto``): the build writes them into a project's build directory (its pom's
protoSourceRoot), so no copy lives under ``services/java``. Read by :mod:`ipclab.javabuild`
(before ``mvn package``, and in the sources hash) and :mod:`ipclab.mavenlock` (before the
online build that makes the lock)."""

from __future__ import annotations

import re
from pathlib import Path

from ipclab.paths import REPO_ROOT

#: the .proto files a project compiles, from the one source every runtime reads
#: (``services/proto``), by project
PROTO_SOURCES = {"payload": ("users.proto", "payments.proto")}
PROTO_DIR = REPO_ROOT / "services" / "proto"
#: the one line the Java build changes: the thesis's printed java_outer_classname is dotted,
#: which is no Java class name (protoc would write a class that does not compile); the wire
#: bytes and the JSON mapping do not depend on it
_DOTTED_OUTER = re.compile(r'^(option java_outer_classname = ")[\w.]*\.(\w+)(";)$', re.M)


def java_proto(text: str) -> str:
    """A ``services/proto`` file as the Java build compiles it: a dotted
    ``java_outer_classname`` reduced to its last name, nothing else changed."""
    return _DOTTED_OUTER.sub(r"\1\2\3", text)


def write_protos(name: str, build_dir: Path) -> None:
    """The project's .proto files into ``<build_dir>/proto`` (the pom's protoSourceRoot),
    made from ``services/proto`` by :func:`java_proto`; no copy is kept in the project."""
    files = PROTO_SOURCES.get(name, ())
    if not files:
        return
    dest = build_dir / "proto"
    dest.mkdir(parents=True, exist_ok=True)
    for f in files:
        (dest / f).write_text(java_proto((PROTO_DIR / f).read_text()))
