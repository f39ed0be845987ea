"""Extremes against major GCs (Fig. 19) and Fig. 16's slow requests, from synthetic runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab.runs import read_run
from ipclab.studies.nyflott import extremes, tables
from tests.test_nyflott_tables import make_run


def write_gc(path: Path, role: str, events: list[tuple[float, float]]) -> None:
    """``logs/<role>.log`` with an ``ipclab-gc`` line per (start, pause ms), among others."""
    (path / "logs").mkdir(exist_ok=True)
    lines = ["INFO started"]
    for t, ms in events:
        lines.append("ipclab-gc " + json.dumps({"t": t, "ms": ms, "collected": 10,
                                                "uncollectable": 0}))  # fmt: skip
    lines.append("ipclab-gc {truncated")  # a role killed mid-write
    (path / "logs" / f"{role}.log").write_text("\n".join(lines) + "\n")


def test_threshold_keeps_the_thesis_share() -> None:
    assert abs(extremes.EXTREME_SHARE - 53 / 252_636) < 1e-12
    lat = np.arange(1.0, 100_001.0)  # 100,000 distinct times
    thr = extremes.threshold(lat)
    assert (lat >= thr).sum() == pytest.approx(100_000 * 53 / 252_636, abs=1)
    assert extremes.threshold(np.array([5.0, 6.0]), share=0.5) == 6.0
    assert np.isnan(extremes.threshold(np.array([])))


def test_a_request_coincides_with_a_gc_whose_pause_overlaps_it() -> None:
    # requests: [10.0, 10.1], [20.0, 20.05], [30.0, 30.01], [40.0, 40.01]
    start = np.array([10.0, 20.0, 30.0, 40.0])
    lat = np.array([100.0, 50.0, 10.0, 10.0])
    # a GC starting during the first; one starting before the second whose 80 ms pause lasts
    # into it; one that ended 40 ms before the third; a long one far before the fourth
    gc_t = np.array([10.05, 19.95, 29.95, 30.5, 35.0])
    gc_ms = np.array([5.0, 80.0, 10.0, 1.0, 1000.0])
    assert list(extremes.coincides(start, lat, gc_t, gc_ms)) == [0, 1, -1, -1]
    assert list(extremes.coincides(start, lat, np.array([]), np.array([]))) == [-1] * 4
    assert extremes.episodes(np.array([1.0, 1.01, 1.5, 3.0]), np.array([20, 5, 10, 1.0])) == 3
    assert extremes.episodes(np.array([]), np.array([])) == 0


def test_run_extremes_against_the_gcs_of_every_role(tmp_path: Path) -> None:
    lat = [5.0] * 200  # t = 1000.0 .. 1019.9, one request every 0.1 s
    lat[120] = lat[150] = 300.0  # t = 1012.0 and 1015.0: the two slowest
    lat[121] = 250.0  # t = 1012.1, also slow, below the threshold
    path = make_run(tmp_path, "acmeair-coap", 1, 0.0, lat)
    write_gc(path, "flight-ingress", [(1012.05, 200.0), (1001.0, 20.0)])
    write_gc(path, "gateway", [(1017.0, 30.0), (1050.0, 5.0)])  # the last: after the run
    write_gc(path, "auth", [])
    row, ext, gcs = extremes.run_extremes(read_run(path), warmup_s=2.0, threshold_ms=300.0)
    assert row["requests"] == 180 and row["extremes"] == 2 and row["episodes"] == 2
    assert row["with_gc"] == 1 and row["fraction"] == 0.5
    # of the 178 others, the flight GC at 1012.05-1012.25 overlaps 1012.1 and 1012.2; the
    # gateway's at 1017.0-1017.03 overlaps 1017.0; the one at 1001 is before the window
    assert row["baseline_fraction"] == pytest.approx(3 / 178)
    assert row["gc_events"] == 2 and row["gc_flight-ingress"] == 1 and row["gc_gateway"] == 1
    assert row["gc_max_ms"] == 200.0
    assert list(ext["gc_role"]) == ["flight-ingress", ""]
    assert list(ext["name"]) == ["Login", "Login"]
    assert sorted(gcs["role"]) == ["flight-ingress", "gateway"]
    default, _, _ = extremes.run_extremes(read_run(path), warmup_s=2.0)  # the thesis's share
    assert default["threshold_ms"] == 300.0 and default["extremes"] == 2


def test_cells_sum_runs_and_a_run_without_logs_counts_no_gcs(tmp_path: Path) -> None:
    runs = []
    for rep in range(3):
        lat = [5.0] * 200
        lat[100 + rep] = 400.0
        path = make_run(tmp_path, "acmeair-coap", rep, 0.0, lat)
        if rep < 2:
            write_gc(path, "flight", [(1010.0 + 0.1 * rep, 50.0)])
        runs.append(read_run(path))
    per_run, ext, _ = extremes.extremes_tables(runs, warmup_s=1.0)
    assert list(per_run["role_logs"]) == [True, True, False]
    assert np.isnan(per_run.loc[2, "with_gc"]) and np.isnan(per_run.loc[2, "gc_events"])
    rows = tables.run_rows(runs, warmup_s=1.0)
    cells = extremes.extremes_cells(per_run, rows)
    c = cells.iloc[0]
    assert c["runs"] == 3 and c["runs_with_logs"] == 2 and c["with_gc"] == 2
    assert c["fraction"] == 1.0 and c["gc_flight_per_run"] == 1.0
    assert len(ext) == per_run["extremes"].sum()


def test_slow_requests_are_figure_16s_range(tmp_path: Path) -> None:
    lat = [5.0] * 100
    lat[50], lat[60], lat[70] = 80.0, 120.0, 199.0  # 80 is outside: the bounds are excluded
    path = make_run(tmp_path, "acmeair-coap", 1, 0.0, lat)
    slow = extremes.slow_requests([read_run(path)], warmup_s=1.0)
    assert list(slow["latency_ms"]) == [120.0, 199.0]
    assert slow["t_rel"].tolist() == pytest.approx([5.0, 6.0])
    assert isinstance(slow, pd.DataFrame)


def test_gc_lines_of_docker_logs_are_read_past_their_timestamps(tmp_path: Path) -> None:
    from ipclab.studies.nyflott import gcevents

    (tmp_path / "logs").mkdir()
    event = json.dumps({"t": 1000.5, "ms": 20.4, "collected": 5, "uncollectable": 0})
    (tmp_path / "logs" / "egress.log").write_text(
        f"2026-11-25T09:33:39.252530119Z ipclab-gc {event}\n"
        f"ipclab-gc {event.replace('1000.5', '1001.5')}\n"
        "2026-11-25T09:33:40Z some text mentioning ipclab-gc {not json}\n"
    )
    gc = gcevents.read_gc_events(tmp_path)
    assert list(gc["t"]) == [1000.5, 1001.5] and set(gc["role"]) == {"egress"}
