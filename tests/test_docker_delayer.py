"""The NFQUEUE delayer's CPU is its own row, not its host container's: found by its command
line and the container's cgroup in the host's /proc, split off the container's docker stats
CPU, and left out of the summary's stack CPU (the emulated delay is not the system's)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ipclab.backends.docker import netem
from ipclab.backends.docker.stats import delayer_cpu_percent, split_delayer
from ipclab.summary import machine_load

CID = "ab" * 32


def _proc(root: Path, pid: int, argv: list[str], cgroup: str, start: int = 100) -> None:
    d = root / str(pid)
    d.mkdir(parents=True)
    (d / "cmdline").write_text("\0".join(argv) + "\0")
    (d / "cgroup").write_text(cgroup)
    (d / "stat").write_text(f"{pid} (python3) S " + " ".join(["0"] * 18 + [str(start)]) + "\n")


DELAYER = ["python3", "-c", "<source>", "--delay-ms", "5", "--pidfile", netem.PIDFILE]


def test_find_delayer_by_command_line_and_cgroup(tmp_path: Path) -> None:
    mine = f"12:cpu,cpuacct:/docker/{CID}\n0::/\n"
    _proc(tmp_path, 10, ["python", "-m", "ipclab_services.serve"], mine)  # the role
    _proc(tmp_path, 11, ["sh", "-c", f"rm -f {netem.PIDFILE}"], mine)  # a clear() exec
    _proc(tmp_path, 12, DELAYER, f"12:cpu,cpuacct:/docker/{'cd' * 32}\n")  # another container
    _proc(tmp_path, 13, DELAYER, mine, start=500)
    _proc(tmp_path, 14, DELAYER, mine, start=400)  # an older one, still going away
    (tmp_path / "self").mkdir()
    assert netem.find_delayer(CID, tmp_path) == 13
    assert netem.is_delayer(13, CID, tmp_path) and not netem.is_delayer(12, CID, tmp_path)
    assert not netem.is_delayer(99, CID, tmp_path)  # gone
    assert netem.find_delayer("ef" * 32, tmp_path) is None


def test_cpu_ns_prefers_schedstat_and_falls_back_to_ticks(tmp_path: Path) -> None:
    _proc(tmp_path, 7, DELAYER, "")
    stat = "7 (python3) S " + " ".join(["0"] * 10 + ["30", "20"]) + "\n"  # utime, stime
    (tmp_path / "7" / "stat").write_text(stat)
    assert netem.cpu_ns(7, tmp_path) == 50 * 1_000_000_000 // netem._CLK_TCK
    (tmp_path / "7" / "schedstat").write_text("123456789 5 6\n")
    assert netem.cpu_ns(7, tmp_path) == 123456789
    assert netem.cpu_ns(8, tmp_path) is None
    (tmp_path / "7" / "status").write_text("Name:\tpython3\nRssAnon:\t    8192 kB\n")
    assert netem.rss_bytes(7, tmp_path) == 8192 * 1024


def _stats(system_ns: int, ncpu: int = 2) -> dict[str, object]:
    return {"cpu_stats": {"system_cpu_usage": system_ns, "online_cpus": ncpu}}


def test_delayer_cpu_percent_uses_dockers_denominator() -> None:
    # 2 cores over 1 s: the machine's CPU time grew by 2e9 ns; the delayer used 50 ms = 5%
    assert delayer_cpu_percent(_stats(4 * 10**9), _stats(2 * 10**9), 150_000_000, 100_000_000) == 5
    assert delayer_cpu_percent(_stats(4 * 10**9), None, 150_000_000, None) is None
    assert delayer_cpu_percent(_stats(4 * 10**9), _stats(2 * 10**9), None, 1) is None


ROW = {
    "t": 1.0, "component": "gateway", "kind": "container", "container": "p_gateway_1",
    "status": "running", "cpu_percent": 30.0, "rss_bytes": 50_000_000, "net_tx_packets": 9,
}  # fmt: skip


def test_split_delayer_takes_its_cpu_off_the_container() -> None:
    row = {**ROW, "delayer_pid": 4242, "delayer_cpu_percent": 7.5, "delayer_rss_bytes": 9_000_000}
    container, delayer = split_delayer(row)
    assert container == {**ROW, "cpu_percent": 22.5}  # memory and counters as they were
    assert delayer == {
        "t": 1.0, "component": "gateway-delayer", "kind": "delayer", "pid": 4242,
        "container": "p_gateway_1", "status": "running", "cpu_percent": 7.5,
        "rss_bytes": 9_000_000,
    }  # fmt: skip
    # read a few ms apart, the delayer can exceed an idle container's reading: clamped at 0
    low, _ = split_delayer({**row, "cpu_percent": 7.0})
    assert low["cpu_percent"] == 0.0
    # its first reading, no delayer share yet: the container's own CPU is unknown
    first, d = split_delayer({**row, "delayer_cpu_percent": None})
    assert first["cpu_percent"] is None and d["cpu_percent"] is None
    # no delayer (0 ms, or netem): the row as it was, alone
    assert split_delayer(dict(ROW)) == [ROW]


def test_summary_leaves_delayers_out_of_the_stack_but_counts_them_as_ours() -> None:
    rows = []
    for t in (1.0, 2.0):
        rows += [
            {"t": t, "component": "gateway", "kind": "container", "cpu_percent": 100.0},
            {"t": t, "component": "gateway-delayer", "kind": "delayer", "cpu_percent": 10.0},
            {"t": t, "component": "loadgen-delayer", "kind": "delayer", "cpu_percent": 5.0},
            {"t": t, "component": "loadgen", "kind": "loadgen", "cpu_percent": 20.0},
            {"t": t, "component": "host", "kind": "host", "cpu_percent": 150.0},
        ]
    out = machine_load(pd.DataFrame(rows), rps=500.0)
    assert out["stack_cpu_ms_per_request"] == pytest.approx(2.0)  # 100% / 500 rps
    assert out["other_cpu_percent"] == pytest.approx(15.0)  # 150 - (100 + 15 + 20)
    assert out["cpu_percent_mean"]["gateway-delayer"] == 10.0


def test_a_restarted_containers_counter_gives_no_reading_not_a_negative_one() -> None:
    from ipclab.backends.docker.stats import _row

    def stats(total: int, system: int) -> dict:
        return {"cpu_stats": {"cpu_usage": {"total_usage": total}, "system_cpu_usage": system,
                              "online_cpus": 2}, "pids_stats": {"current": 3}}  # fmt: skip

    before, steady = stats(9_000_000_000, 100_000_000_000), stats(9_500_000_000, 102_000_000_000)
    assert _row("gateway", "g", steady, before)["cpu_percent"] == 50.0
    restarted = stats(100_000_000, 104_000_000_000)  # the new container's counter
    assert "cpu_percent" not in _row("gateway", "g", restarted, steady)  # was -4,284% once
    after = stats(600_000_000, 106_000_000_000)
    assert _row("gateway", "g", after, restarted)["cpu_percent"] == 50.0
