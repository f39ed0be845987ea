"""``ipclab runs``: one table of every run, selected by its columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipclab import runindex
from ipclab.cli import main
from ipclab.runs import RunWriter
from ipclab.stacks import resolve


def _runs(root: Path) -> None:
    for stack, users in (("shop-rest", 3), ("shop-grpc", 3), ("shop-grpc", 5)):
        spec = resolve(stack).declaration()
        w = RunWriter(
            root / f"{stack}-u{users}", "load", {"users": users, "repetition": 1},
            stack=stack, style=spec.get("transport"),
            stack_spec=spec, backend="local", users=users,
        )  # fmt: skip
        w.write_json("summary.json", {"rps": 10.0 * users, "latency_ms": {"mean": 4.0}})
        w.finish("complete")


def test_the_index_lists_every_run_with_what_made_it_and_selects_by_column(
    tmp_path: Path,
) -> None:
    _runs(tmp_path)
    table = runindex.index([tmp_path])
    assert len(table) == 3 and table["current_code"].all()
    assert table["code_known_by"].eq("recorded").all() and table["key"].str.len().eq(16).all()
    grpc5 = runindex.select(table, runindex.parse_where(["stack=shop-grpc", "users=5"]))
    assert grpc5["path"].str.endswith("shop-grpc-u5").tolist() == [True]
    assert grpc5["rps"].tolist() == [50.0] and grpc5["mean_ms"].tolist() == [4.0]
    with pytest.raises(ValueError, match="no column stak"):
        runindex.select(table, {"stak": "x"})
    with pytest.raises(ValueError, match="column=value"):
        runindex.parse_where(["users"])


def test_ipclab_runs_prints_the_selected_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _runs(tmp_path)
    assert main(["runs", "--root", str(tmp_path), "--where", "stack=shop-grpc", "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("path,status,stack") and len(lines) == 3
    with pytest.raises(SystemExit, match="no column"):
        main(["runs", "--root", str(tmp_path), "--where", "nothing=1"])
