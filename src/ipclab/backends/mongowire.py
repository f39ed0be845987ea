"""A minimal MongoDB wire-protocol client: OP_MSG commands with SCRAM-SHA-256, enough for
the harness to know a private FerretDB answers, with which credentials (``ping``), and to
seed it (``insert``), with no driver installed.

BSON is encoded for ``str``, ``int`` (int32, or int64 beyond), ``float``, ``bool``,
``None``, ``bytes`` (binary, subtype 0), ``dict`` and ``list``, and decoded for those and
the types a server's replies carry besides (ObjectId, datetime, timestamp: as raw values).
A command's ``ok: 0`` raises ``CommandError`` (its code and message); a refused
authentication is ``AuthFailed``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import secrets
import socket
import struct
from typing import Any

OP_MSG = 2013
_ids = itertools.count(1)


class CommandError(RuntimeError):
    def __init__(self, reply: dict[str, Any]) -> None:
        self.code = reply.get("code")
        super().__init__(f"{reply.get('codeName', 'error')} ({self.code}): {reply.get('errmsg')}")


class AuthFailed(CommandError):
    pass


def _element(key: str, value: Any) -> bytes:
    name = key.encode() + b"\0"
    if isinstance(value, bool):
        return b"\x08" + name + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return b"\x10" + name + struct.pack("<i", value)
        return b"\x12" + name + struct.pack("<q", value)
    if isinstance(value, float):
        return b"\x01" + name + struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode() + b"\0"
        return b"\x02" + name + struct.pack("<i", len(raw)) + raw
    if value is None:
        return b"\x0a" + name
    if isinstance(value, bytes):
        return b"\x05" + name + struct.pack("<i", len(value)) + b"\x00" + value
    if isinstance(value, dict):
        return b"\x03" + name + encode(value)
    if isinstance(value, list | tuple):
        return b"\x04" + name + encode({str(i): v for i, v in enumerate(value)})
    raise TypeError(f"BSON: cannot encode {type(value).__name__} ({key})")


def encode(doc: dict[str, Any]) -> bytes:
    body = b"".join(_element(k, v) for k, v in doc.items()) + b"\0"
    return struct.pack("<i", len(body) + 4) + body


_FIXED = {0x01: ("<d", 8), 0x10: ("<i", 4), 0x12: ("<q", 8), 0x09: ("<q", 8), 0x11: ("<Q", 8)}


def _value(kind: int, data: bytes, at: int) -> tuple[Any, int]:
    if kind in _FIXED:
        fmt, size = _FIXED[kind]
        return struct.unpack_from(fmt, data, at)[0], at + size
    if kind == 0x02:
        (n,) = struct.unpack_from("<i", data, at)
        return data[at + 4 : at + 3 + n].decode(), at + 4 + n
    if kind in (0x03, 0x04):
        (n,) = struct.unpack_from("<i", data, at)
        doc = decode(data[at : at + n])
        return (list(doc.values()) if kind == 0x04 else doc), at + n
    if kind == 0x05:
        (n,) = struct.unpack_from("<i", data, at)
        return data[at + 5 : at + 5 + n], at + 5 + n
    if kind == 0x08:
        return data[at] == 1, at + 1
    if kind == 0x0A:
        return None, at
    if kind == 0x07:
        return data[at : at + 12].hex(), at + 12
    raise ValueError(f"BSON: type 0x{kind:02x} not decoded")


def decode(data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    at, end = 4, struct.unpack_from("<i", data)[0] - 1
    while at < end:
        kind = data[at]
        nul = data.index(b"\0", at + 1)
        key = data[at + 1 : nul].decode()
        out[key], at = _value(kind, data, nul + 1)
    return out


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        buf += chunk
    return bytes(buf)


class Connection:
    """One connection to a MongoDB-wire server (``with Connection(host, port) as c:``)."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def command(self, db: str, cmd: dict[str, Any], check: bool = True) -> dict[str, Any]:
        """Run ``cmd`` in ``db`` (OP_MSG, one body section); its reply."""
        body = struct.pack("<I", 0) + b"\0" + encode({**cmd, "$db": db})
        self.sock.sendall(struct.pack("<iiii", 16 + len(body), next(_ids), 0, OP_MSG) + body)
        length, _, _, opcode = struct.unpack("<iiii", _recv_exact(self.sock, 16))
        payload = _recv_exact(self.sock, length - 16)
        if opcode != OP_MSG or payload[4] != 0:
            raise ConnectionError(f"unexpected reply (opcode {opcode})")
        reply = decode(payload[5:])
        if check and reply.get("ok") != 1:
            raise CommandError(reply)
        return reply

    def login(self, user: str, password: str, db: str) -> None:
        """SCRAM-SHA-256 (RFC 7677) as MongoDB drivers do it; ``AuthFailed`` if refused
        (the password is used as is: SASLprep leaves a generated ASCII one unchanged)."""
        nonce = base64.b64encode(secrets.token_bytes(24)).decode()
        first_bare = f"n={user},r={nonce}"
        start = {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "autoAuthorize": 1}
        reply = self._sasl(db, {**start, "payload": f"n,,{first_bare}".encode()})
        server_first = reply["payload"].decode()
        fields = dict(item.split("=", 1) for item in server_first.split(","))
        if not fields["r"].startswith(nonce):
            raise AuthFailed({"errmsg": "server nonce does not extend ours"})
        salted = hashlib.pbkdf2_hmac(
            "sha256", password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
        )
        client_key = hmac.new(salted, b"Client Key", "sha256").digest()
        without_proof = f"c=biws,r={fields['r']}"
        auth = f"{first_bare},{server_first},{without_proof}".encode()
        signature = hmac.new(hashlib.sha256(client_key).digest(), auth, "sha256").digest()
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True)))
        final = f"{without_proof},p={proof.decode()}".encode()
        cid = reply["conversationId"]
        reply = self._sasl(db, {"saslContinue": 1, "conversationId": cid, "payload": final})
        server_key = hmac.new(salted, b"Server Key", "sha256").digest()
        expected = base64.b64encode(hmac.new(server_key, auth, "sha256").digest()).decode()
        if reply["payload"].decode() != f"v={expected}":
            raise AuthFailed({"errmsg": "the server's signature does not match"})
        if not reply.get("done"):
            self._sasl(db, {"saslContinue": 1, "conversationId": cid, "payload": b""})

    def _sasl(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:
        reply = self.command(db, cmd, check=False)
        if reply.get("ok") != 1:
            raise AuthFailed(reply)
        return reply


def ping(host: str, port: int, user: str, password: str, db: str) -> dict[str, Any]:
    """Log in and ``ping``: the server answers these credentials."""
    with Connection(host, port) as c:
        c.login(user, password, db)
        return c.command(db, {"ping": 1})
