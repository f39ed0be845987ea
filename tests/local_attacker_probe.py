"""The local attacker's probe (tests/test_local_attacker.py): run as ``nobody`` by the
system's Python (standard library only), it tries each step of a plan against the running
stacks and prints what came of each, one JSON document.

This file is read as text and run with ``python3 -I -c`` (``attacker.probe``), so it imports
nothing of ipclab. A step is ``[kind, *args]``:

- ``tcp host port``: a TCP connection opens;
- ``http host port path``: a GET's status line;
- ``amqp host port user password``: an AMQP 0-9-1 login (PLAIN), as far as ``Connection.Tune``
  (the broker accepted the login) or its refusal;
- ``postgres host port user database``: a PostgreSQL start-up, up to the server's first
  answer: ``trust`` (logged in without a password), ``password asked`` (SCRAM or another
  method: without the password nothing more happens) or the server's error;
- ``epmd host port``: epmd's NAMES answer (what it tells anyone);
- ``read path``: the file's first bytes, or why not;
- ``environ pid``: ``/proc/<pid>/environ``, or why not;
- ``cmdline pid``: ``/proc/<pid>/cmdline``.
"""

import json
import os
import socket
import struct


def _recv(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise EOFError("closed by the server")
        out += chunk
    return out


def tcp(host, port):
    try:
        socket.create_connection((host, port), timeout=5).close()
        return "open"
    except OSError as e:
        return "refused: " + (e.strerror or type(e).__name__)


def http(host, port, path):
    try:
        with socket.create_connection((host, port), timeout=10) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            return _recv(s, 12).decode(errors="replace")
    except (OSError, EOFError) as e:
        return "refused: " + str(e)


def _frame(s):
    kind, _channel, size = struct.unpack(">BHI", _recv(s, 7))
    payload = _recv(s, size)
    _recv(s, 1)  # frame end
    return kind, payload


def amqp(host, port, user, password):
    try:
        with socket.create_connection((host, port), timeout=10) as s:
            s.sendall(b"AMQP\x00\x00\x09\x01")
            _frame(s)  # Connection.Start
            response = b"\x00" + user.encode() + b"\x00" + password.encode()
            args = (
                struct.pack(">I", 0)
                + bytes([5])
                + b"PLAIN"
                + struct.pack(">I", len(response))
                + response
                + bytes([5])
                + b"en_US"
            )
            payload = struct.pack(">HH", 10, 11) + args
            s.sendall(struct.pack(">BHI", 1, 0, len(payload)) + payload + b"\xce")
            _kind, answer = _frame(s)
            method = struct.unpack(">HH", answer[:4])
            if method == (10, 30):
                return "accepted"
            if method == (10, 50):
                code = struct.unpack(">H", answer[4:6])[0]
                text = answer[7 : 7 + answer[6]].decode(errors="replace")
                return f"refused: {code} {text[:60]}"
            return f"refused: method {method}"
    except (OSError, EOFError) as e:
        return "refused: " + str(e)


def postgres(host, port, user, database):
    try:
        with socket.create_connection((host, port), timeout=10) as s:
            body = (
                struct.pack(">I", 196608)
                + b"user\x00"
                + user.encode()
                + b"\x00database\x00"
                + database.encode()
                + b"\x00\x00"
            )
            s.sendall(struct.pack(">I", len(body) + 4) + body)
            kind = _recv(s, 1)
            size = struct.unpack(">I", _recv(s, 4))[0]
            answer = _recv(s, size - 4)
            if kind == b"R":
                code = struct.unpack(">I", answer[:4])[0]
                return "trust" if code == 0 else f"password asked (method {code})"
            if kind == b"E":
                fields = dict((f[:1], f[1:]) for f in answer.split(b"\x00") if f)
                return "refused: " + fields.get(b"M", b"?").decode(errors="replace")[:80]
            return f"refused: message {kind!r}"
    except (OSError, EOFError) as e:
        return "refused: " + str(e)


def epmd(host, port):
    try:
        with socket.create_connection((host, port), timeout=5) as s:
            s.sendall(struct.pack(">H", 1) + bytes([110]))  # NAMES_REQ
            data = b""
            while chunk := s.recv(4096):
                data += chunk
            return "names: " + data[4:].decode(errors="replace").strip()
    except OSError as e:
        return "refused: " + (e.strerror or str(e))


def read(path):
    try:
        with open(path, "rb") as f:
            return "read: " + f.read(40).decode(errors="replace")
    except OSError as e:
        return "denied: " + (e.strerror or type(e).__name__)


def environ(pid):
    return read(f"/proc/{pid}/environ")


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return "read: " + f.read().replace(b"\x00", b" ").decode(errors="replace")
    except OSError as e:
        return "denied: " + (e.strerror or type(e).__name__)


STEPS = {
    "tcp": tcp,
    "http": http,
    "amqp": amqp,
    "postgres": postgres,
    "epmd": epmd,
    "read": read,
    "environ": environ,
    "cmdline": cmdline,
}
plan = json.loads(os.environ["IPCLAB_ATTACK_PLAN"])
print(json.dumps({name: STEPS[step[0]](*step[1:]) for name, step in plan.items()}))
