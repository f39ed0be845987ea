"""Per-host CPU and network per run, from synthetic run directories (no stacks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab.runs import RESOURCE_COLUMNS, read_run
from ipclab.studies.nyflott import hosts, verdicts
from tests.test_nyflott_tables import make_run


def write_resources(path: Path, gateway_cpu: float, bytes_per_s: float = 1000.0) -> None:
    """11 samples a second apart for the five hosts: each sends and receives
    ``bytes_per_s`` bytes and 4 packets a second."""
    rows = []
    for i in range(11):
        for host in hosts.HOSTS:
            rows.append(
                {
                    "t": 1000.0 + i,
                    "component": host,
                    "kind": "container",
                    "container": f"x-{host}",
                    "status": "running",
                    "cpu_percent": gateway_cpu if host == "gateway" else 5.0,
                    "net_tx_bytes": 50_000 + bytes_per_s * i,
                    "net_rx_bytes": 70_000 + bytes_per_s * i,
                    "net_tx_packets": 100 + 4 * i,
                    "net_rx_packets": 200 + 4 * i,
                }
            )
    pd.DataFrame(rows, columns=list(RESOURCE_COLUMNS)).to_csv(path / "resources.csv", index=False)


def test_host_row_over_the_measured_window(tmp_path: Path) -> None:
    path = make_run(tmp_path, "acmeair-coap", 1, 0.0, [5.0] * 100)  # t = 1000.0 .. 1009.9
    write_resources(path, gateway_cpu=40.0)
    row = hosts.host_row(read_run(path), warmup_s=1.0)  # samples t = 1001 .. 1010
    assert row["cpu_gateway_percent"] == 40.0 and row["cpu_auth_percent"] == 5.0
    assert row["cpu_system_percent"] == 60.0
    assert row["gateway_tx_bytes_per_s"] == pytest.approx(1000.0)
    # 5 hosts x (1000 sent + 1000 received) B/s x 9 s over the 90 requests of 1001..1010
    assert row["bytes_per_request"] == pytest.approx(90_000 / 90)
    assert row["packets_per_request"] == pytest.approx(5 * 8 * 9 / 90)
    assert row["bytes_per_packet"] == pytest.approx(250.0)


def test_missing_or_reset_counters_give_nan(tmp_path: Path) -> None:
    path = make_run(tmp_path, "acmeair-http1", 1, 0.0, [5.0] * 100)
    row = hosts.host_row(read_run(path), warmup_s=0.0)  # no resources.csv (local backend)
    assert np.isnan(row["cpu_gateway_percent"]) and np.isnan(row["bytes_per_request"])
    write_resources(path, gateway_cpu=10.0)
    res = pd.read_csv(path / "resources.csv")
    res.loc[(res["component"] == "flight") & (res["t"] == 1010.0), "net_tx_bytes"] = 0
    res.to_csv(path / "resources.csv", index=False)  # flight restarted: its counter fell
    row = hosts.host_row(read_run(path), warmup_s=0.0)
    assert np.isnan(row["flight_tx_bytes_per_s"]) and np.isnan(row["bytes_per_request"])
    assert row["cpu_gateway_percent"] == 10.0


def test_claims_from_run_directories(tmp_path: Path) -> None:
    """Table 2 and host rows merged per run, then judged: CoAP's gateway CPU above
    HTTP/1.1's at 0 ms (N10b), with h2c and the other delays not run."""
    runs = []
    for rep in range(3):
        for stack, cpu, lat in (("acmeair-coap", 40.0, 6.0), ("acmeair-http1", 20.0, 5.0)):
            path = make_run(tmp_path, stack, rep, 0.0, [lat + 0.1 * rep] * 100)
            write_resources(path, gateway_cpu=cpu + rep, bytes_per_s=900.0 if cpu > 30 else 1000.0)
            runs.append(read_run(path))
    rows = verdicts.per_run(runs, warmup_s=1.0)
    assert len(rows) == 6 and {"mean_ms", "cpu_gateway_percent"} <= set(rows.columns)
    t = verdicts.evaluate(rows).set_index("claim_id")
    assert t.loc["N10b", "verdict"] == "reproduced"
    assert t.loc["N13a", "verdict"] == "reproduced"  # the same cells
    assert t.loc["N01d", "verdict"] == "reproduced"  # CoAP's mean above HTTP/1.1's at 0 ms
    assert t.loc["N10a", "verdict"] == "inconclusive"  # no h2c runs
    assert t.loc["N09d", "verdict"] == "inconclusive"
