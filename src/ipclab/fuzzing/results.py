"""What one input class against one target gave, and the table docs/fuzzing.md holds."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field

HOST = "127.0.0.1"  # every input goes here, never anywhere else
DEADLINE_S = 2.0  # the gateway's call timeout
GRACE_S = 3.0  # an answer is due within deadline + grace
DUE_S = DEADLINE_S + GRACE_S + 0.5  # later than this is a late answer


@dataclass
class ClassResult:
    stack: str
    target: str  # "gateway front" or "services (<transport kind>)"
    name: str  # the input class
    inputs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    late: int = 0  # answered (or hung) beyond the deadline + grace
    crashes: int = 0  # stack processes that exited
    page_ok_after: bool = False  # the stack's own known-good page, right after the class
    seconds: float = 0.0

    @property
    def bad(self) -> bool:
        return bool(self.crashes or self.late or not self.page_ok_after)


IN_FLIGHT = 16  # inputs in flight per port


async def drive(
    res: ClassResult,
    ports: Sequence[int],
    attempt: Callable[[int, random.Random], Awaitable[tuple[str, float]]],
    n: int,
    seed: int,
    late: Collection[str] = ("no answer",),
) -> None:
    """``n`` inputs to each port, ``IN_FLIGHT`` at a time per port, each port's drawn from
    its own ``random.Random(seed)``: ``attempt(port, r)`` makes one and returns its outcome
    and how long it took; an outcome in ``late``, or one that took past ``DUE_S``, is late."""

    async def port_run(port: int) -> None:
        r = random.Random(seed)
        sem = asyncio.Semaphore(IN_FLIGHT)

        async def single() -> None:
            async with sem:
                outcome, took = await attempt(port, r)
            res.outcomes[outcome] += 1
            res.late += outcome in late or took > DUE_S
            res.inputs += 1

        await asyncio.gather(*(single() for _ in range(n)))

    await asyncio.gather(*(port_run(p) for p in ports))


def row(r: ClassResult) -> str:
    outcomes = ", ".join(f"{k} {v}" for k, v in r.outcomes.most_common())
    page = "yes" if r.page_ok_after else "NO"
    return (
        f"| {r.stack} | {r.target} | {r.name} | {r.inputs} | {outcomes} | {r.late} | "
        f"{r.crashes} | {page} | {r.seconds:.1f} |"
    )


def table(results: list[ClassResult]) -> str:
    head = (
        "| stack | target | input class | inputs | outcomes | late | crashes | page after | s |\n"
        "|---|---|---|---:|---|---:|---:|---|---:|"
    )
    return "\n".join([head, *(row(r) for r in results)])


def totals(results: list[ClassResult]) -> str:
    """One line per target (inputs), then crashes, late answers and page checks overall."""
    per: Counter[tuple[str, str]] = Counter()
    for r in results:
        per[(r.stack, r.target)] += r.inputs
    least = min(per.values(), default=0)
    return (
        f"Targets: {len(per)} ({len({s for s, _ in per})} stacks), inputs per target: "
        f"at least {least:,}, {sum(per.values()):,} in all. "
        f"Crashes: {sum(r.crashes for r in results)}. "
        f"Late answers: {sum(r.late for r in results)}. "
        "Correct page after every class: "
        f"{'yes' if all(r.page_ok_after for r in results) else 'NO'}."
    )
