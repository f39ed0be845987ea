"""Table 2 and the per-test-case view from run directories (synthetic runs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab.runs import RunWriter, read_run
from ipclab.studies.nyflott import tables


def make_run(
    root: Path, stack: str, rep: int, delay: float, lat: list[float], **fields: object
) -> Path:
    """A complete run of ``stack``: one request every 0.1 s from t = 1000 with the response
    times ``lat`` (Login and Query Flight in turn); ``fields`` go into the manifest (e.g.
    ``stack_spec``)."""
    params = {"users": 10, "repetition": rep, "options": {"delay_ms": delay}}
    path = root / f"{stack}-{rep}-{delay}"
    w = RunWriter(path, "load", params, stack=stack, backend="docker", **fields)
    n = len(lat)
    req = pd.DataFrame(
        {
            "t": 1000.0 + 0.1 * np.arange(n),
            "name": ["Login", "Query Flight"] * (n // 2),
            "latency_ms": np.asarray(lat, dtype=float),
            "bytes": 100,
            "status": 200,
            "ok": True,
            "error": None,
        }
    )
    (path / "requests").mkdir()
    req.to_parquet(path / "requests" / "part-00000.parquet")
    w.write_json("summary.json", {"requests": n, "failures": 0})
    w.finish("complete")
    return path


def test_table2_per_protocol_and_delay_with_intervals(tmp_path: Path) -> None:
    warm = [100.0] * 10  # the first second: discarded
    runs = [
        read_run(make_run(tmp_path, "acmeair-coap", 1, 5.0, warm + [20.0, 30.0] * 20)),
        read_run(make_run(tmp_path, "acmeair-coap", 2, 5.0, warm + [22.0, 32.0] * 20)),
        read_run(make_run(tmp_path, "acmeair-http1", 1, 5.0, warm + [21.0, 23.0] * 20)),
    ]
    rows = tables.run_rows(runs, warmup_s=1.0)
    first = rows.iloc[0]
    assert first["style"] == "coap" and first["delay_ms"] == 5.0
    assert first["requests"] == 40 and first["min_ms"] == 20.0 and first["max_ms"] == 30.0
    assert first["sd_ms"] == pytest.approx(5.0)  # population SD of 20s and 30s
    t2 = tables.table2(rows).set_index("style")
    coap = t2.loc["coap"]
    assert coap["runs"] == 2 and coap["mean_ms"] == pytest.approx(26.0)
    assert coap["mean_ms_low"] < 26.0 < coap["mean_ms_high"]
    assert coap["published_mean_ms"] == 29.8653 and coap["published_requests"] == 195262
    assert np.isnan(t2.loc["http1", "mean_ms_low"])  # one run: no interval
    cases = tables.per_test_case(runs, warmup_s=1.0)
    login = cases[(cases["run"] == tables.run_label(runs[0])) & (cases["test_case"] == "Login")]
    assert login.iloc[0]["min_ms"] == 20.0 and login.iloc[0]["count"] == 20


def test_the_test_cases_are_the_users_names() -> None:
    """Every request the Locust user names is one of the thesis's test cases, and every
    test case is named (read from its source: importing it would import Locust, whose
    gevent patches this process)."""
    import ast

    import ipclab.studies.nyflott as pkg

    tree = ast.parse((Path(pkg.__file__).parent / "users.py").read_text())
    names = {
        ast.literal_eval(k.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        for k in n.keywords
        if k.arg == "name" and isinstance(k.value, ast.Constant)
    }
    assert names == set(tables.TEST_CASES)
