"""The fuzzing campaign (issues 13 and 28): its plan comes from the stack registry, and its
short version runs in `make test`; the full one is `make fuzz` (docs/fuzzing.md). Real
stacks on 127.0.0.1, at most a few hundred malformed inputs per target here."""

from __future__ import annotations

import dataclasses

import pytest

from ipclab import fuzz
from ipclab.fuzzing import plan as fuzz_plan
from ipclab.stacks import all_stacks
from tests.conftest import ipclab_processes

SHORT_COUNT = 120  # inputs per target in the short version


def test_every_stack_in_the_registry_is_planned_with_its_gateway_and_its_transport() -> None:
    stacks = all_stacks()
    targets = fuzz_plan.plan(stacks, 1000)
    assert {t.stack for t in targets} == set(stacks)
    for name, spec in stacks.items():
        mine = [t for t in targets if t.stack == name]
        assert fuzz_plan.GATEWAY in {t.name for t in mine}, name
        assert fuzz_plan.kind_of(spec.transport) in {
            t.kind for t in mine if t.name != fuzz_plan.GATEWAY
        }
        for t in mine:
            assert sum(n for _, n in t.classes) >= 1000 - len(t.classes), t
            assert set(t.roles) <= set(spec.roles), t


def test_a_stack_added_to_the_registry_is_fuzzed_without_an_edit() -> None:
    stacks = all_stacks()
    base = stacks["shop-rest"]
    new = dataclasses.replace(base, name="shop-h2c-new", transport="h2c", description="a new stack")
    planned = fuzz_plan.plan({**stacks, new.name: new}, 500)
    mine = {t.name: t for t in planned if t.stack == new.name}
    assert set(mine) == {fuzz_plan.GATEWAY, "services (h2c)"}
    assert mine["services (h2c)"].roles == new.services
    # a stack that brings something no other has (here a front) joins the short version
    odd = dataclasses.replace(base, name="shop-odd", front="odd-front")
    assert "shop-odd" in fuzz_plan.cover([*stacks.values(), odd])


def test_a_transport_no_fuzzer_speaks_stops_the_plan_rather_than_being_skipped() -> None:
    new = dataclasses.replace(all_stacks()["shop-rest"], name="shop-quic", transport="quic")
    with pytest.raises(fuzz_plan.UnfuzzedTransport, match="quic"):
        fuzz_plan.plan({new.name: new}, 10)


def test_the_short_version_covers_every_transport_domain_front_runtime_and_adapter_set() -> None:
    stacks = all_stacks()
    chosen = fuzz_plan.cover(stacks.values())
    for feature in (*fuzz_plan.FEATURES,):
        assert {getattr(stacks[n], feature) for n in chosen} == {
            getattr(s, feature) for s in stacks.values()
        }, feature
    assert {stacks[n].runtime.name for n in chosen} == {s.runtime.name for s in stacks.values()}
    adapters = {s.adapter_runtime for s in stacks.values()}
    assert {stacks[n].adapter_runtime for n in chosen} == adapters
    assert any(a is not None for a in adapters)  # Californium's stack is among them


@pytest.mark.slow
@pytest.mark.parametrize("stack", fuzz_plan.cover(all_stacks().values()))
def test_malformed_inputs_crash_nothing_answer_in_time_and_the_stack_still_serves(
    stack: str,
) -> None:
    why = all_stacks()[stack].unavailable()
    if why:
        pytest.skip(f"{stack} cannot run here: {why}")
    results = fuzz.campaign([stack], count=SHORT_COUNT, seed=7)
    planned = {t.name for t in fuzz_plan.targets(all_stacks()[stack], SHORT_COUNT)}
    assert {r.target for r in results} == planned
    assert sum(r.inputs for r in results) >= SHORT_COUNT * len(planned) * 0.9
    for r in results:
        assert r.crashes == 0, fuzz.row(r)
        assert r.late == 0, fuzz.row(r)
        assert r.page_ok_after, fuzz.row(r)
        if r.target == fuzz_plan.GATEWAY and r.name == "random bytes":
            # a 400, or (RFC 9112 lets a server close instead) a closed connection where the
            # request line never ended before the client's half-close: uvicorn and Go answer
            # 400 there, the JVM's Netty closes
            assert "4xx" in r.outcomes, fuzz.row(r)
            assert set(r.outcomes) <= {"4xx", "closed, no answer"}, fuzz.row(r)
    assert not ipclab_processes()


@pytest.mark.slow
def test_the_fuzzer_sees_a_crash_and_a_broken_page() -> None:
    """The checks above can fail: a stack whose service died is reported as such."""
    from ipclab.backends import StackOptions, get_backend
    from ipclab.stacks import resolve

    stack = get_backend("local").start(resolve("shop-rest"), StackOptions(call_timeout_s=1.0))
    try:
        stack.procs["reviews"].kill()  # type: ignore[attr-defined]
        stack.procs["reviews"].wait(timeout=10)  # type: ignore[attr-defined]
        assert fuzz.exited(stack) == 1  # type: ignore[arg-type]
        assert not fuzz.page_ok(stack)  # type: ignore[arg-type]
    finally:
        stack.stop()
