"""The machine check before a run (ipclab.stats.machine.wait_until_quiet): a planned run
waits while other processes keep the machine busy, and goes ahead, saying so, once it is
quiet or after the longest wait; ``ipclab plan --make`` asks before every run."""

from __future__ import annotations

from ipclab import decide
from ipclab.stats import machine


def _sampler(busy: list[float]):  # the machine's CPU, one value per look
    values = iter(busy)
    return lambda: machine.Sample(next(values), 0.0)


def test_a_run_waits_while_the_machine_is_busy() -> None:
    said: list[str] = []
    slept: list[float] = []
    ok = machine.wait_until_quiet(said.append, sampler=_sampler([180.0, 60.0, 8.0]),
                                  sleep=slept.append, poll_s=15)  # fmt: skip
    assert ok and slept == [15, 15]
    assert len(said) == 2 and "180% CPU of other processes" in said[0]


def test_after_the_longest_wait_the_run_goes_ahead_and_is_marked() -> None:
    said: list[str] = []
    ok = machine.wait_until_quiet(said.append, sampler=_sampler([90.0] * 5),
                                  sleep=lambda s: None, poll_s=10, max_wait_s=30)  # fmt: skip
    assert not ok and "still busy after 30 s" in said[-1]


def test_a_steal_heavy_machine_is_busy_too() -> None:
    assert machine.quiet(machine.Sample(5.0, 2.0))
    assert not machine.quiet(machine.Sample(5.0, 30.0))
    assert not machine.quiet(machine.Sample(26.0, 0.0))


def test_every_planned_run_asks_first() -> None:
    asked: list[int] = []
    made: list[tuple[str, int]] = []

    class Part:
        def extend(self, plan: object, runs: list[tuple[str, int]], progress: object) -> None:
            made.extend(runs)

    source = decide.Source("s", "r", Part(), None, None, [])  # type: ignore[arg-type]
    order = [("r:cell-a", 1), ("r:cell-b", 1)]
    n = decide.make([source], order, lambda m: None, wait_quiet=lambda say: asked.append(1) or True)
    assert n == 2 and made == order and len(asked) == 2
