"""The docker backend's run logs are written whole: a chatty role keeps its early lines (its
``ipclab-gc`` events among them), not a 5000-line tail; error messages keep the tail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ipclab.backends.docker.backend import DockerStack


class _Container:
    """A docker SDK container's ``logs(tail=..., timestamps=...)``, over a fixed text."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.tails: list[Any] = []

    def logs(self, tail: int | str = "all", timestamps: bool = False) -> bytes:
        self.tails.append(tail)
        kept = self.lines if tail == "all" else self.lines[-int(tail) :]
        return "".join(f"{line}\n" for line in kept).encode()


def _stack(containers: dict[str, _Container]) -> DockerStack:
    stack = DockerStack.__new__(DockerStack)  # only what logs() reads
    stack._containers = containers
    return stack


def test_write_logs_keeps_a_chatty_roles_early_gc_lines(tmp_path: Path) -> None:
    lines = ["ipclab-gc gen=2 start", *(f"GET /x {i}" for i in range(12_000)), "last"]
    gateway = _Container(lines)
    stack = _stack({"gateway": gateway})
    stack.write_logs(tmp_path / "logs")
    text = (tmp_path / "logs" / "gateway.log").read_text()
    assert gateway.tails == ["all"]
    assert text.splitlines() == lines  # whole: the first line too


def test_logs_for_error_messages_keep_the_tail() -> None:
    gateway = _Container([f"line {i}" for i in range(6000)])
    out = _stack({"gateway": gateway}).logs()
    assert gateway.tails == [5000]
    assert out["gateway"].splitlines()[0] == "line 1000"
