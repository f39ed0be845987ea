"""Commands in a container (``backends/docker/execs.py``): a waited command's status and whole
output, known whole by its last line; output the engine cut is run again, never read as the
command's; and ``tc``'s failure read from its whole output (netem, or the NFQUEUE fallback)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from ipclab.backends.docker import execs, netem


class _Res(NamedTuple):
    exit_code: int | None
    output: bytes | None


def _whole(status: int, output: str) -> _Res:
    return _Res(status, f"{output}\n{execs.END}{status}\n".encode())


class FakeContainer:
    """Answers each exec with ``answer(inner command, try number)``."""

    name = "ipclab-test_reviews_1"

    def __init__(self, answer: Callable[[list[str], int], _Res]) -> None:
        self.answer = answer
        self.calls: list[list[str]] = []

    def exec_run(self, cmd: list[str], user: str = "", detach: bool = False) -> Any:
        assert user == "root"
        inner = cmd if detach else cmd[4:]
        if not detach:
            assert cmd[:4] == execs.wrapped([])
        self.calls.append(inner)
        return self.answer(inner, sum(c == inner for c in self.calls))


def test_the_wrapper_gives_the_status_and_both_streams_in_order_on_a_real_shell() -> None:
    cmd = ["sh", "-c", "echo out; echo err >&2; printf no-newline; exit 3"]
    done = execs.parse(subprocess.run(execs.wrapped(cmd), capture_output=True).stdout)
    assert done == execs.Done(3, "out\nerr\nno-newline")


def test_output_without_its_whole_status_line_is_not_whole() -> None:
    assert execs.parse(b"") is None  # everything dropped
    assert execs.parse(b"Error: Specified qdisc kind is unknown.\n") is None  # the line lost
    assert execs.parse(f"x\n{execs.END}1".encode()) is None  # cut inside it (12?)
    assert execs.parse(b"OCI runtime exec failed: broken pipe\r\n") is None  # never started
    assert execs.parse(f"\n{execs.END}0\n".encode()) == execs.Done(0, "")


def test_a_cut_output_is_run_again_and_the_whole_one_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execs.time, "sleep", lambda s: None)
    ctr = FakeContainer(lambda cmd, n: _Res(2, b"") if n == 1 else _whole(2, "Error: x"))
    assert execs.run(ctr, ["tc", "qdisc"]) == execs.Done(2, "Error: x")
    assert len(ctr.calls) == 2


def test_output_never_whole_is_an_error_that_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execs.time, "sleep", lambda s: None)
    ctr = FakeContainer(lambda cmd, n: _Res(None, b""))
    with pytest.raises(execs.ExecError, match="no whole output in 4 tries.*exit status None"):
        execs.run(ctr, ["tc", "qdisc"])
    assert len(ctr.calls) == execs.TRIES


def _kernel(tc: _Res) -> Callable[[list[str], int], _Res]:
    """A container on a kernel whose ``tc ... netem`` answers ``tc``; all else succeeds."""

    def answer(cmd: list[str], n: int) -> _Res:
        return tc if cmd[0] == "tc" else _whole(0, "")

    return answer


@pytest.fixture(autouse=True)
def _no_kernel_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netem, "_KERNEL_NETEM", {})


def test_no_netem_in_the_kernel_falls_back_to_the_delayer_once_known() -> None:
    ctr = FakeContainer(_kernel(_whole(2, "Error: Specified qdisc kind is unknown.")))
    assert netem.set_delay(ctr, 5) == "nfqueue"
    assert netem.set_delay(ctr, 5) == "nfqueue"  # the kernel is known: no tc again
    assert sum(c[0] == "tc" for c in ctr.calls) == 1
    assert any("iptables -t mangle -C" in " ".join(c) for c in ctr.calls)


def test_tc_lost_output_is_run_again_not_taken_for_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The failure of the two-worker test run: tc's "unknown" dropped by the engine."""
    monkeypatch.setattr(execs.time, "sleep", lambda s: None)

    def answer(cmd: list[str], n: int) -> _Res:
        if cmd[0] != "tc":
            return _whole(0, "")
        return _Res(2, b"") if n == 1 else _whole(2, "Error: Specified qdisc kind is unknown.")

    ctr = FakeContainer(answer)
    assert netem.set_delay(ctr, 5) == "nfqueue"


def test_another_tc_failure_is_reported_with_its_status_and_text() -> None:
    ctr = FakeContainer(_kernel(_whole(2, 'Error: Cannot find device "eth0".')))
    with pytest.raises(netem.NetemError, match=r"exit status 2\): Error: Cannot find device"):
        netem.set_delay(ctr, 5)


def test_netem_where_the_kernel_has_it() -> None:
    ctr = FakeContainer(_kernel(_whole(0, "")))
    assert netem.set_delay(ctr, 5) == "netem"
    assert netem.set_delay(ctr, 5, method="netem") == "netem"
