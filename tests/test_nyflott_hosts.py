"""Per-host CPU and network per run, from synthetic run directories (no stacks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab.runs import RESOURCE_COLUMNS, read_run
from ipclab.studies.nyflott import hosts, verdicts
from tests.test_nyflott_tables import make_run

SIDECARS = ("egress", "auth-ingress", "booking-ingress", "customer-ingress", "flight-ingress")


def write_resources(
    path: Path,
    gateway_cpu: float,
    bytes_per_s: float = 1000.0,
    sidecars: bool = False,
    loadgen: bool = False,
) -> None:
    """11 samples a second apart (t = 1000 .. 1010) for the five hosts: each sends and
    receives ``bytes_per_s`` bytes and 4 packets a second; with ``sidecars`` every host
    also has its adapter (2% CPU, no counters: it shares its host's interface), with
    ``loadgen`` the load generator's container (30% CPU, its own counters)."""
    rows = []
    for i in range(11):
        t = 1000.0 + i
        comps = [*hosts.THESIS_HOSTS, *(SIDECARS if sidecars else ())]
        comps += ["loadgen"] if loadgen else []
        for k, comp in enumerate(comps):
            own = comp in hosts.THESIS_HOSTS or comp == "loadgen"
            cpu = gateway_cpu if comp == "gateway" else 30.0 if comp == "loadgen" else 5.0
            rows.append(
                {
                    "t": t + 0.002 * k,  # the components of a round a few ms apart
                    "component": comp,
                    "kind": "container",
                    "container": f"x-{comp}",
                    "status": "running",
                    "cpu_percent": cpu if own else 2.0,
                    "net_tx_bytes": 50_000 + bytes_per_s * i if own else None,
                    "net_rx_bytes": 70_000 + bytes_per_s * i if own else None,
                    "net_tx_packets": 100 + 4 * i if own else None,
                    "net_rx_packets": 200 + 4 * i if own else None,
                }
            )
        rows.append({"t": t, "component": "host", "kind": "host", "cpu_percent": 150.0})
    pd.DataFrame(rows, columns=list(RESOURCE_COLUMNS)).to_csv(path / "resources.csv", index=False)


def test_host_row_over_the_measured_window(tmp_path: Path) -> None:
    path = make_run(tmp_path, "acmeair-coap", 1, 0.0, [5.0] * 100)  # t = 1000.0 .. 1009.9
    write_resources(path, gateway_cpu=40.0)
    # the window: 1001 (first request + 1 s) to 1009.905 (end of the last request):
    # samples t = 1001 .. 1009, 8 s apart, and the 81 requests started in them
    row = hosts.host_row(read_run(path), warmup_s=1.0)
    assert row["cpu_gateway_percent"] == 40.0 and row["cpu_auth_percent"] == 5.0
    assert row["cpu_system_percent"] == 60.0
    assert row["gateway_tx_bytes_per_s"] == pytest.approx(1000.0)
    # 5 hosts x (1000 sent + 1000 received) B/s x 8 s over 81 requests
    assert row["bytes_per_request"] == pytest.approx(80_000 / 81)
    assert row["packets_per_request"] == pytest.approx(5 * 8 * 8 / 81)
    assert row["bytes_per_packet"] == pytest.approx(250.0)


def test_roles_are_summed_per_host_and_the_load_generator_is_a_host(tmp_path: Path) -> None:
    path = make_run(tmp_path, "acmeair-coap", 1, 0.0, [5.0] * 100)
    write_resources(path, gateway_cpu=40.0, sidecars=True, loadgen=True)
    t = hosts.host_table(read_run(path), warmup_s=1.0).set_index("host")
    assert list(t.index) == [*hosts.THESIS_HOSTS, "loadgen"]
    assert t.loc["gateway", "roles"] == "egress gateway"
    assert t.loc["auth", "roles"] == "auth auth-ingress"
    assert t.loc["gateway", "cpu_mean"] == pytest.approx(42.0)  # gateway + egress
    assert t.loc["flight", "cpu_mean"] == pytest.approx(7.0) and t.loc["flight", "cpu_sd"] == 0
    assert t.loc["gateway", "rounds"] == 9  # rounds found though the samples are ms apart
    assert t.loc["auth", "tx_bytes"] == 8000.0  # the sidecar reports no counters
    assert t.loc["auth", "tx_bytes_per_request"] == pytest.approx(8000 / 81)
    assert t.loc["loadgen", "cpu_mean"] == 30.0 and t.loc["loadgen", "rx_packets"] == 32
    row = hosts.host_row(read_run(path), warmup_s=1.0)
    assert row["cpu_loadgen_percent"] == 30.0
    assert row["cpu_system_percent"] == pytest.approx(42.0 + 4 * 7.0)  # not the loadgen
    assert row["bytes_per_request"] == pytest.approx(80_000 / 81)  # the five hosts only


def test_the_manifest_says_which_host_a_role_is_on(tmp_path: Path) -> None:
    spec = {"adapters": "python", "hosts": {"egress": "gateway", "auth-ingress": "flight"}}
    path = make_run(tmp_path, "acmeair-coap", 1, 0.0, [5.0] * 100, stack_spec=spec)
    write_resources(path, gateway_cpu=40.0, sidecars=True)
    run = read_run(path)
    assert hosts.host_of(run, "auth-ingress") == "flight"  # recorded
    assert hosts.host_of(run, "booking-ingress") == "booking"  # the stack's declaration
    assert hosts.host_of(run, "loadgen") == "loadgen"
    t = hosts.host_table(run, warmup_s=1.0).set_index("host")
    assert t.loc["flight", "roles"] == "auth-ingress flight flight-ingress"
    assert t.loc["auth", "cpu_mean"] == 5.0


def test_a_run_without_recorded_hosts_uses_its_stack_or_the_role(tmp_path: Path) -> None:
    old = read_run(make_run(tmp_path, "acmeair-coap", 1, 0.0, [5.0] * 10))
    assert hosts.host_of(old, "egress") == "gateway"  # the registry's acmeair-coap
    assert hosts.host_of(old, "flight-ingress") == "flight"
    assert hosts.host_of(old, "-ingress") == "-ingress"
    unknown = read_run(make_run(tmp_path, "no-such-stack", 1, 0.0, [5.0] * 10))
    assert hosts.host_of(unknown, "egress") == "egress"


def test_a_role_that_is_not_a_host_is_kept(tmp_path: Path) -> None:
    path = make_run(tmp_path, "acmeair-coap", 1, 0.0, [5.0] * 100)
    write_resources(path, gateway_cpu=40.0)
    res = pd.read_csv(path / "resources.csv")
    extra = res[res["component"] == "auth"].assign(component="cache", cpu_percent=9.0)
    pd.concat([res, extra]).to_csv(path / "resources.csv", index=False)
    t = hosts.host_table(read_run(path), warmup_s=1.0).set_index("host")
    assert t.loc["cache", "cpu_mean"] == 9.0
    assert hosts.host_row(read_run(path), warmup_s=1.0)["cpu_cache_percent"] == 9.0


def test_missing_or_reset_counters_give_nan(tmp_path: Path) -> None:
    path = make_run(tmp_path, "acmeair-http1", 1, 0.0, [5.0] * 100)
    row = hosts.host_row(read_run(path), warmup_s=0.0)  # no resources.csv (local backend)
    assert np.isnan(row["cpu_system_percent"]) and np.isnan(row["bytes_per_request"])
    write_resources(path, gateway_cpu=10.0)
    res = pd.read_csv(path / "resources.csv")
    res.loc[(res["component"] == "flight") & (res["t"] > 1009), "net_tx_bytes"] = 0
    res.to_csv(path / "resources.csv", index=False)  # flight restarted: its counter fell
    row = hosts.host_row(read_run(path), warmup_s=0.0)
    assert np.isnan(row["flight_tx_bytes_per_s"]) and np.isnan(row["bytes_per_request"])
    assert row["cpu_gateway_percent"] == 10.0
    res[["net_tx_bytes", "net_rx_bytes", "net_tx_packets", "net_rx_packets"]] = None
    res.to_csv(path / "resources.csv", index=False)  # CPU only (the local backend)
    t = hosts.host_table(read_run(path), warmup_s=0.0)
    assert t["tx_bytes"].isna().all() and t["cpu_mean"].notna().all()


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


def test_delayer_rows_are_reported_beside_their_host_not_as_hosts(tmp_path: Path) -> None:
    path = make_run(tmp_path, "acmeair-coap", 1, 5.0, [25.0] * 100)
    write_resources(path, gateway_cpu=40.0)
    res = pd.read_csv(path / "resources.csv")
    extra = [
        {"t": t, "component": "gateway-delayer", "kind": "delayer", "cpu_percent": 7.0}
        for t in res["t"].unique()
    ]
    pd.concat([res, pd.DataFrame(extra)]).to_csv(path / "resources.csv", index=False)
    table = hosts.host_table(read_run(path), 1.0)
    assert set(table["host"]) == set(hosts.THESIS_HOSTS)  # no delayer, no machine row
    gw = table.set_index("host").loc["gateway"]
    assert gw["cpu_mean"] == pytest.approx(40.0) and gw["delayer_cpu_mean"] == pytest.approx(7.0)
    assert np.isnan(table.set_index("host").loc["auth", "delayer_cpu_mean"])
