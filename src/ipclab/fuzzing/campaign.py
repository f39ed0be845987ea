"""Run the plan: start each stack on the local backend, send every target its classes, and
after each class count the stack's exited processes and check its own page."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.local import LocalStack
from ipclab.fuzzing import amqp, coap, fronts, grpc, h2c, http1
from ipclab.fuzzing.pages import page_ok, page_target
from ipclab.fuzzing.plan import GATEWAY, Target, targets
from ipclab.fuzzing.results import DEADLINE_S, ClassResult, row, table, totals
from ipclab.stacks import StackSpec, all_stacks, resolve

# every stack starts with gzip on: only the payload service reads it (answers and bodies
# compressed when asked), so its gzip path is fuzzed too
OPTIONS = StackOptions(call_timeout_s=DEADLINE_S, extra_env={"IPCLAB_GZIP": "1"})


def exited(stack: LocalStack) -> int:
    """How many of the stack's processes have exited (crashed: nothing stops them here)."""
    return sum(p.poll() is not None for p in stack.procs.values())


def job(
    stack: LocalStack, target: Target, name: str, n: int, seed: int, res: ClassResult
) -> Callable[[], Awaitable[None]]:
    """The coroutine that sends one class of ``target``'s inputs."""
    spec = stack.spec
    page = page_target(spec)
    ports = [stack.ports[r] for r in target.roles]
    per_port = max(1, -(-n // max(1, len(ports))))  # rounded up: the target gets n at least
    if target.name == GATEWAY:
        extra = fronts.extra_classes(spec)
        fronts.warm()  # inputs built once (a gzip bomb takes seconds) block no connection
        if name in extra:
            gen = extra[name][0]
        else:
            page_gen = http1.CLASSES[name][0]
            gen = lambda r: page_gen(r, page)  # noqa: E731
        return lambda: http1.fuzz(res, ports, gen, n, seed, stall=name == http1.STALL)
    if target.kind == "http1":
        page_gen = http1.CLASSES[name][0]
        return lambda: http1.fuzz(res, ports, lambda r: page_gen(r, page), per_port, seed)
    if target.kind == "h2c":
        return lambda: h2c.fuzz(res, ports, h2c.CLASSES[name][0], page, per_port, seed)
    if target.kind == "coap":
        return lambda: coap.fuzz(res, ports, coap.CLASSES[name][0], page, per_port, seed)
    if target.kind == "grpc":
        return lambda: grpc.fuzz(res, spec, stack.ports, n, seed)
    if target.kind == "amqp":
        return lambda: amqp.fuzz(res, stack, n, seed)
    raise AssertionError(f"no sender for kind {target.kind!r}")  # plan.kind_of refuses first


def fuzz_stack(
    stack: LocalStack, count: int, seed: int, out: Callable[[str], Any] = print
) -> list[ClassResult]:
    """Every target of a running stack, ``count`` inputs each."""
    results = []
    for target in targets(stack.spec, count):
        for name, n in target.classes:
            res = ClassResult(stack.spec.name, target.name, name)
            t0 = time.monotonic()
            asyncio.run(job(stack, target, name, n, seed, res)())
            res.seconds = time.monotonic() - t0
            res.crashes = exited(stack)
            res.page_ok_after = page_ok(stack)
            results.append(res)
            out(row(res))
    return results


def unavailable(spec: StackSpec) -> str | None:
    return spec.runtime.unavailable()


def campaign(stacks: list[str], count: int, seed: int = 1) -> list[ClassResult]:
    """``count`` malformed inputs per target of every stack named."""
    results: list[ClassResult] = []
    backend = get_backend("local")
    for name in stacks:
        spec = resolve(name)
        why = unavailable(spec)
        if why:
            raise RuntimeError(f"{name} cannot run here: {why}")
        stack = backend.start(spec, OPTIONS)
        assert isinstance(stack, LocalStack)
        try:
            results += fuzz_stack(stack, count, seed, lambda line: print(line, flush=True))
        finally:
            stack.stop()
    return results


def write_table(out: Path, text: str) -> None:
    """Replace everything after the ``<!-- table -->`` marker (the prose above it stays)."""
    head = out.read_text().split("<!-- table -->")[0] + "<!-- table -->\n" if out.exists() else ""
    out.write_text(head + text + "\n")


def main(argv: list[str] | None = None) -> int:
    from ipclab.cli import install_signal_handlers

    install_signal_handlers()
    p = argparse.ArgumentParser(prog="ipclab.fuzz", description=__doc__)
    p.add_argument("--stacks", nargs="+", default=list(all_stacks()), help="default: every stack")
    p.add_argument("--count", type=int, default=10_000, help="inputs per stack and target")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, help="write the table into this markdown file")
    a = p.parse_args(argv)
    if not 1 <= a.count <= 200_000:
        p.error("--count must be from 1 to 200000")
    t0 = time.monotonic()
    results = campaign(a.stacks, a.count, a.seed)
    took = time.monotonic() - t0
    text = f"{table(results)}\n\n{totals(results)} Seed {a.seed}, {took:.0f} s in all."
    print(text)
    if a.out:
        write_table(a.out, text)
    return 1 if any(r.bad for r in results) else 0
