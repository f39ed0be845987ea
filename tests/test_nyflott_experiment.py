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
