"""Encoders and decoders: JSON (compact, with the standard library or orjson: the encoder is
a factor of the experiment, not a hidden choice) and protobuf; ``protobuf_backend()`` says
which implementation the ``protobuf`` package runs on (upb, or pure Python), which changes
its speed by an order of magnitude and belongs in every run's manifest.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import google.protobuf
import orjson
from google.protobuf import json_format
from google.protobuf.internal import api_implementation
from google.protobuf.message import Message
from ipclab_services.domains.payload.data import Structure, message_type

JsonLibrary = Literal["json", "orjson"]
JSON_LIBRARIES: tuple[JsonLibrary, ...] = ("json", "orjson")
CONTENT_TYPES = {"json": "application/json", "protobuf": "application/x-protobuf"}


def encode_json(document: Any, library: JsonLibrary = "orjson") -> bytes:
    """Compact UTF-8 JSON (no spaces); both libraries give the same bytes for payloads."""
    if library == "orjson":
        return orjson.dumps(document)
    if library == "json":
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
    raise ValueError(f"unknown JSON library {library!r}; known: {', '.join(JSON_LIBRARIES)}")


def decode_json(data: bytes | bytearray, library: JsonLibrary = "orjson") -> Any:
    if library == "orjson":
        return orjson.loads(data)
    if library == "json":
        return json.loads(data)
    raise ValueError(f"unknown JSON library {library!r}; known: {', '.join(JSON_LIBRARIES)}")


def encode_protobuf(message: Message) -> bytes:
    return message.SerializeToString()


def decode_protobuf(structure: Structure, data: bytes | bytearray) -> Message:
    """The message of ``structure`` in ``data``; ``google.protobuf.message.DecodeError``
    when the bytes are not one (a truncated body, say)."""
    message = message_type(structure)()
    message.ParseFromString(data)
    return message


def message_to_document(message: Message) -> dict[str, Any]:
    """A message as the JSON-ready document ``data`` builds: proto field names as keys,
    enums by name, fields at their default written out."""
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def protobuf_backend() -> dict[str, str]:
    """``{"protobuf": version, "implementation": "upb" | "python" | ...}``."""
    return {
        "protobuf": google.protobuf.__version__,
        "implementation": api_implementation.Type(),
    }
