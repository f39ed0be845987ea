"""``ipclab compare A B``: two run sets cell by cell, B/A with the interval and the "agree"
rule of docs/statistics.md section 8; cells in one side only listed; bad input refused; and,
on the committed Shafabakhsh references, the claims side by side equal to the report's
table across backends (issue 49, must show 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from ipclab import compare as cmp
from ipclab import robustness as rb
from ipclab.cli import main
from ipclab.paths import REPO_ROOT
from ipclab.stats.intervals import t_interval

REFERENCE = REPO_ROOT / "data" / "runs" / "reference"
LOCAL = REFERENCE / "shafabakhsh-full-local"
DOCKER = REFERENCE / "shafabakhsh-full-docker"


def _run(folder: Path, name: str, rep: int, rps: float, mean_ms: float, backend: str) -> None:
    run = folder / f"{name}-r{rep}"
    run.mkdir(parents=True)
    manifest = {
        "kind": "load", "status": "complete", "stack": "shop-rest", "backend": backend,
        "users": 50, "parameters": {"stack": "shop-rest", "users": 50, "repetition": rep,
                                    "profile": {"warmup_s": 10}},
    }  # fmt: skip
    summary = {"rps": rps, "requests": int(rps * 100), "failures": 0, "duration_s": 100.0,
               "latency_ms": {"mean": mean_ms, "p50": mean_ms}}  # fmt: skip
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "summary.json").write_text(json.dumps(summary))


def _sets(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "set-local", tmp_path / "set-docker"
    for rep, (x, y) in enumerate([(100, 50), (110, 52), (90, 48)], start=1):
        _run(a, "shop-rest-u50-base", rep, x, y, "local")
        _run(b, "shop-rest-u50-base", rep, x * 1.02, y, "docker")  # alike
        _run(a, "shop-rest-u100-base", rep, x, y, "local")
        _run(b, "shop-rest-u100-base", rep, 2 * x, y * 1.5, "docker")  # twice the throughput
        _run(a, "shop-rest-u200-base", rep, x, y, "local")  # in A only
    _run(b, "shop-rest-u400-base", 1, 10, 10, "docker")  # in B only, one run
    _run(b, "shop-rest-u50-base", 4, 101, 50, "docker")  # a fourth run of a common cell
    return a, b


def test_each_common_cell_gets_b_over_a_with_the_agreement_tables_interval(
    tmp_path: Path,
) -> None:
    a, b = _sets(tmp_path)
    c = cmp.compare(a, b)
    t = c.cells.set_index(["cell", "statistic"])
    assert set(t.index) == {(f"shop-rest-u{u}-base", s) for u in (50, 100) for s in
                            ("rps", "mean_ms")}  # fmt: skip
    assert t.loc[("shop-rest-u50-base", "rps"), "agree"] == "agree"
    assert t.loc[("shop-rest-u50-base", "mean_ms"), "agree"] == "agree"
    assert t.loc[("shop-rest-u100-base", "rps"), "agree"] == "differ"
    assert t.loc[("shop-rest-u100-base", "mean_ms"), "agree"] == "differ"
    # the estimates: the mean over runs with its t interval; the ratio: section 8's
    ia, ib = t_interval([100, 110, 90]), t_interval([102, 112.2, 91.8, 101])
    row = t.loc[("shop-rest-u50-base", "rps")]
    assert (row["n_a"], row["n_b"]) == (3, 4)
    assert (row["a"], row["a_low"], row["a_high"]) == pytest.approx((ia.estimate, ia.low, ia.high))
    ratio = rb.ratio_of_estimates(ia.estimate, ia.low, ia.high, ib.estimate, ib.low, ib.high)
    assert (row["b_over_a"], row["ratio_low"], row["ratio_high"]) == pytest.approx(ratio)
    assert rb.estimates_differ(ratio) is False
    # cells in one side only are listed, with their runs
    only = {(r.side, r.cell, r.runs) for r in c.only.itertuples()}
    assert only == {("A", "shop-rest-u200-base", 3), ("B", "shop-rest-u400-base", 1)}
    out = cmp.text(c)
    assert "Only in A: shop-rest-u200-base (load, 3 runs)" in out
    assert "Only in B: shop-rest-u400-base (load, 1 runs)" in out
    assert "4 statistics of 2 cells in both: 2 agree, 2 differ, 0 no interval" in out
    assert "claims not compared: no claims tables" in out
    assert c.a.path == a and cmp.labels(a, b) == ("local", "docker")


def test_a_cell_of_one_run_has_no_interval_and_says_so(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, "shop-rest-u50-base", 1, 100, 50, "local")
    _run(b, "shop-rest-u50-base", 1, 200, 50, "local")
    c = cmp.compare(a, b)
    assert set(c.cells["agree"]) == {"no interval"}
    assert c.cells.loc[c.cells["statistic"] == "rps", "b_over_a"].item() == pytest.approx(2.0)
    assert cmp.labels(a, b) == ("a", "b")  # one backend: the folders' names


def test_bad_input_gets_a_clear_error(tmp_path: Path) -> None:
    a, _ = _sets(tmp_path)
    with pytest.raises(cmp.CompareError, match="is not a folder"):
        cmp.compare(a, tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(cmp.CompareError, match="is not a run folder: no complete run"):
        cmp.compare(tmp_path / "empty", a)
    other = tmp_path / "other"
    _run(other, "shop-grpc-u50-base", 1, 100, 50, "local")
    with pytest.raises(cmp.CompareError, match="have no cell in common"):
        cmp.compare(a, other)
    with pytest.raises(SystemExit, match="ipclab compare: .* is not a run folder"):
        main(["compare", str(tmp_path / "empty"), str(a)])


def test_the_command_prints_the_table_and_writes_csv_and_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _sets(tmp_path)
    csv, md = tmp_path / "cells.csv", tmp_path / "cmp.md"
    assert main(["compare", str(a), str(b), "--csv", str(csv), "--markdown", str(md)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"A: {a} (local, 9 runs)\nB: {b} (docker, 8 runs)\n")
    table = pd.read_csv(csv)
    assert sorted(table["side"].unique()) == ["A", "B", "compared"]
    assert len(table[table["side"] == "compared"]) == 4
    text = md.read_text()
    assert "| cell | statistic | A | n A | B | n B | B/A | agree |" in text
    assert "- Only in B: shop-rest-u400-base (load, 1 runs)" in text


@pytest.mark.skipif(not DOCKER.is_dir(), reason="no committed reference")
def test_compare_on_the_shafabakhsh_references_is_the_reports_table(tmp_path: Path) -> None:
    """Must show 4: the claims ``ipclab compare`` sets side by side on the local and docker
    references are the report's table across backends, and the committed backends.csv."""
    from ipclab.report.robustness_section import pairs

    c = cmp.compare(LOCAL, DOCKER)
    assert c.claims is not None and c.claims.labels == ("local", "docker")
    report = {title: t for title, t, _, factor in pairs(REFERENCE) if factor == "backend"}
    pd.testing.assert_frame_equal(c.claims.table, report[c.claims.title])
    written = tmp_path / "claims.csv"
    c.claims.table.to_csv(written, index=False)
    pd.testing.assert_frame_equal(
        pd.read_csv(written), pd.read_csv(DOCKER / "results" / "backends.csv")
    )
    assert rb.agreement_sentence(c.claims.table, c.claims.title, c.claims.labels, "backend") in (
        cmp.text(c)
    )


@pytest.mark.skipif(not DOCKER.is_dir(), reason="no committed reference")
def test_the_cells_are_the_studys_own_cells() -> None:
    """Each side's estimate is the reference's own cells.csv (the same per-run values, the
    same t interval): the command computes no second statistic."""
    c = cmp.compare(LOCAL, DOCKER)
    for folder, side in ((LOCAL, "a"), (DOCKER, "b")):
        own = pd.read_csv(folder / "results" / "cells.csv")
        own = own[(own["think_time_s"] == 0) & own["metric"].isin(["rps", "mean_ms"])]
        for r in own.itertuples():
            row = c.cells[(c.cells["cell"] == f"shop-{r.style}-u{r.users}-base")
                          & (c.cells["statistic"] == r.metric)]  # fmt: skip
            assert len(row) == 1, (r.style, r.users, r.metric)
            got = row[[side, f"{side}_low", f"{side}_high", f"n_{side}"]].iloc[0].tolist()
            assert got == pytest.approx([r.mean, r.ci_low, r.ci_high, r.n])


AVAILABILITY = REFERENCE / "availability-full-local"


@pytest.mark.skipif(not AVAILABILITY.is_dir(), reason="no committed reference")
def test_availability_cells_are_mttf_mttr_and_a_of_the_studys_summary() -> None:
    """An availability cell's statistics are the study's own summary (cycles pooled over
    the cell's runs, start-up failures apart); the tuned runs are a cell of their own."""
    c = cmp.compare(AVAILABILITY, REFERENCE / "availability-full-docker")
    own = pd.read_csv(AVAILABILITY / "results" / "summary_fault_injection.csv")
    for r in own.itertuples():
        cell = c.cells[c.cells["cell"] == f"fault_injection-shop-{r.style}-u{r.users}"]
        got = cell.set_index("statistic")[["a", "a_low", "a_high"]]
        for name in cmp.POOLED:
            want = [getattr(r, name), getattr(r, f"{name}_lo"), getattr(r, f"{name}_hi")]
            assert got.loc[name].tolist() == pytest.approx(want, nan_ok=True), (r.style, name)
    assert {"outage_s"} <= set(c.cells["statistic"])
    assert any(cell.endswith("-tuned") for cell in c.cells["cell"])
