"""Compile .proto text with protoc (grpcio-tools' ``grpc_tools.protoc``, the compiler
``make proto`` uses) and load its messages without generating a module: each compile gets
its own descriptor pool, so two versions of one message (``evolution.Person`` v1 and v2)
live side by side in one process.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message


class ProtocError(Exception):
    """protoc refused a schema; the message is its stderr."""


def protoc(source: str, name: str = "schema.proto") -> bytes:
    """``source`` compiled to a serialized ``FileDescriptorSet``, or ProtocError."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / name).write_text(source)
        out = Path(tmp) / "out.pb"
        done = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp}",
             f"--descriptor_set_out={out}", name],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if done.returncode != 0:
            raise ProtocError(done.stderr.strip().replace(tmp + "/", ""))
        return out.read_bytes()


@functools.cache
def messages(source: str, name: str = "schema.proto") -> dict[str, type[Message]]:
    """Every top-level message of ``source`` by its short name (``Person``), each version in
    a pool of its own."""
    files = descriptor_pb2.FileDescriptorSet.FromString(protoc(source, name))
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    out: dict[str, type[Message]] = {}
    for f in files.file:
        prefix = f"{f.package}." if f.package else ""
        for m in f.message_type:
            out[m.name] = message_factory.GetMessageClass(
                pool.FindMessageTypeByName(prefix + m.name)
            )
    return out
