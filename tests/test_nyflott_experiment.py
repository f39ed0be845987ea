"""The Nyfløtt load matrix: profiles, delays per backend, one interleaved order."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ipclab.experiments import interleaved
from ipclab.studies.nyflott import experiment as ex


def test_full_profile_on_docker_is_protocols_x_adapter_sets_x_3_delays_x_5(
    tmp_path: Path,
) -> None:
    exps = ex.experiments("full", "docker", tmp_path)
    assert [e.options.delay_ms for e in exps] == [0.0, 2.0, 5.0]
    stacks = ex.stacks(("python", "native"))
    assert stacks[:3] == ex.STACKS and set(stacks[3:]) <= set(ex.NATIVE_STACKS)
    for e in exps:
        assert tuple(e.stacks) == stacks and tuple(e.users) == (10,)
        assert (e.repetitions, e.warmup_s, e.duration_s) == (5, 150, 750)
        assert e.spawn_rate == pytest.approx(10 / 30)
        assert e.directory == tmp_path / "nyflott-full-docker" / f"delay{int(e.options.delay_ms)}ms"
    cells = 3 * len(stacks)  # per repetition
    order = interleaved(exps, 2017)
    assert len(order) == 5 * cells
    assert len({(e.name, c.key) for e, c in order}) == 5 * cells
    reps = [c.repetition for _, c in order]
    assert reps == sorted(reps)  # repetitions in sequence, each a block of all cells
    assert Counter(reps) == {r: cells for r in range(1, 6)}
    first = [(e.options.delay_ms, c.stack) for e, c in order[:cells]]
    assert first != sorted(first)  # shuffled, not grouped by delay or protocol
    assert order == interleaved(ex.experiments("full", "docker", tmp_path), 2017)


def test_local_backend_has_delay_0_only_and_a_short_window_is_a_parameter(tmp_path: Path) -> None:
    exps = ex.experiments("quick", "local", tmp_path)
    assert [e.options.delay_ms for e in exps] == [0.0]
    assert tuple(exps[0].stacks) == ex.STACKS  # the python adapters only
    short = ex.experiments("full", "docker", tmp_path, measured_s=120)
    assert {e.duration_s for e in short} == {270}
    with pytest.raises(ValueError, match="unknown profile"):
        ex.profile("huge")


def test_the_plan_carries_its_profile_so_quick_and_full_are_told_apart_without_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the profiling testbed runs follows the profile the experiments carry (and
    experiment.json records), not a folder's name: each plan moved under a folder named
    like the other profile still runs as its own."""
    from dataclasses import replace

    from ipclab.studies import part
    from ipclab.studies.nyflott import protocol

    profiled: list[Path] = []
    monkeypatch.setattr(protocol, "run_interleaved", lambda plan, seed: [])
    monkeypatch.setattr(protocol.profiling, "ensure_profile", profiled.append)
    protocols = part("nyflott")
    for name, misleading in (("quick", "nyflott-full-local"), ("full", "nyflott-quick-local")):
        plan = [replace(e, root=tmp_path / misleading) for e in ex.experiments(name, "local")]
        assert {e.profile_name for e in plan} == {name}
        assert plan[0].describe()["profile_name"] == name  # what experiment.json records
        profiled.clear()
        protocols.run(plan)
        assert profiled == ([tmp_path / misleading / "profiling"] if name == "full" else [])
    unnamed = [replace(e, profile_name="") for e in ex.experiments("full", "local", tmp_path)]
    with pytest.raises(ValueError, match="unknown profile"):
        protocols.run(unnamed)  # a plan that names no profile is an error, not a guess
    assert "profile_name" not in unnamed[0].describe()  # recorded as before the field
