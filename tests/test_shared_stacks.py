"""An experiment whose cells share their stack (``Experiment.share_stacks``, the quick
profiles): a stack's cells back to back within each repetition, one stack start for them,
runs that say so and are never reused for an experiment that starts a stack per cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipclab.experiments import Experiment
from ipclab.load.group import GroupLoad
from ipclab.runs import read_run
from tests.conftest import harness_children

STACKS = ("shop-rest", "shop-grpc", "shop-amqp")


def test_a_stacks_cells_run_back_to_back_and_the_unshared_order_is_unchanged(
    tmp_path: Path,
) -> None:
    kw = dict(stacks=STACKS, users=(50, 100, 200), repetitions=2, root=tmp_path)
    plain = Experiment("x", **kw)  # type: ignore[arg-type]
    shared = Experiment("x", share_stacks=True, **kw)  # type: ignore[arg-type]
    assert sorted(c.key for c in shared.cells()) == sorted(c.key for c in plain.cells())
    for rep in (1, 2):
        block = [c for c in shared.cells() if c.repetition == rep]
        stacks = [c.stack for c in block]
        runs = [s for i, s in enumerate(stacks) if i == 0 or stacks[i - 1] != s]
        assert sorted(runs) == sorted(STACKS)  # each stack once: its cells together
        # the stacks in the order the unshared experiment meets them first
        unshared = [c.stack for c in plain.cells() if c.repetition == rep]
        assert runs == list(dict.fromkeys(unshared))
    # repetitions stay in sequence
    assert [c.repetition for c in shared.cells()] == sorted(c.repetition for c in shared.cells())


def test_sharing_is_refused_for_a_group(tmp_path: Path) -> None:
    load = GroupLoad("ipclab.studies.johansson.users_interleaved", requests=2)
    with pytest.raises(ValueError, match="share_stacks"):
        Experiment("x", stacks=("bundle-rest",), users=(1,), group=load, share_stacks=True,
                   root=tmp_path)  # fmt: skip


@pytest.mark.slow
def test_cells_sharing_a_stack_start_it_once_and_leave_nothing(tmp_path: Path) -> None:
    # 8 s a cell: a Locust start on a busy 2-core machine can take most of a short one
    e = Experiment("shared", stacks=("shop-rest",), users=(2, 4), duration_s=8, warmup_s=2,
                   share_stacks=True, root=tmp_path)  # fmt: skip
    before = harness_children()
    runs = e.run(progress=lambda _: None)
    assert [r.manifest["status"] for r in runs] == ["complete", "complete"]
    urls = set()
    for r in runs:
        events = [ev["event"] for ev in r.events()]
        assert "stack_shared" in events and "stack_starting" not in events
        urls |= {ev["gateway_url"] for ev in r.events() if ev["event"] == "stack_shared"}
        assert r.parameters["shared_stack"] is True
        assert r.summary["requests"] > 0
    assert len(urls) == 1  # one stack served both cells
    assert (tmp_path / "shared" / "stacks" / "shop-rest-base-r1" / "logs").is_dir()
    left = harness_children() - before
    assert not left
    # reused by the same experiment, never by one that starts a stack per cell
    assert e.pending() == []
    unshared = Experiment("shared", stacks=("shop-rest",), users=(2, 4), duration_s=8,
                          warmup_s=2, root=tmp_path)  # fmt: skip
    assert len(unshared.pending()) == 2
    assert read_run(runs[0].path).complete


def test_a_resumed_experiments_stack_keeps_the_logs_of_the_first(tmp_path: Path) -> None:
    """A shared stack started again for the same cells (an experiment resumed after a stop)
    writes its logs beside those of the stack the finished runs were made on."""
    from ipclab.experiments import _new_logs

    folder = tmp_path / "stacks" / "shop-rest-base-r1"
    first = _new_logs(folder)
    assert first == folder / "logs"
    first.mkdir(parents=True)
    (first / "gateway.log").write_text("the first stack's")
    assert _new_logs(folder) == folder / "logs-2"
    (folder / "logs-2").mkdir()
    assert _new_logs(folder) == folder / "logs-3"
    assert (first / "gateway.log").read_text() == "the first stack's"
