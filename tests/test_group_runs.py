"""Experiment variants (a knob as a shuffled factor) and group runs (several stacks under
one load, compared request by request): cells, reuse, and a real run that leaves nothing."""

from __future__ import annotations

import dataclasses
import socket
import urllib.parse
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ipclab.backends import StackOptions
from ipclab.backends.postgres import PostgresUnavailable, find_bin_dir
from ipclab.experiments import Cell, Experiment
from ipclab.load.group import GroupLoad, StackGroup, run_group
from ipclab.load.runner import LoadProfile
from ipclab.runs import RunWriter, compact_requests, read_run
from ipclab.stacks import resolve

PAIR = ("bundle-rest", "bundle-graphql")
USERS = "ipclab.studies.johansson.users_interleaved"


def _load(requests: int = 4, warmup: int = 1, extra: int = 0) -> GroupLoad:
    env = {"IPCLAB_SCHEDULE_REQUESTS": str(requests), "IPCLAB_SCHEDULE_WARMUP": str(warmup)}
    return GroupLoad(USERS, requests=2 * (requests + warmup) + extra, env=env)


def test_variants_are_a_factor_shuffled_within_each_repetition(tmp_path: Path) -> None:
    variants = {"rows5": StackOptions(seed=5), "rows25": StackOptions(seed=25)}
    e = Experiment("x", stacks=PAIR, users=(1, 2), repetitions=3, variants=variants, root=tmp_path)
    cells = e.cells()
    assert len(cells) == 2 * 2 * 2 * 3 and len({c.key for c in cells}) == len(cells)
    for rep in (1, 2, 3):
        block = cells[(rep - 1) * 8 : rep * 8]
        assert {(c.stack, c.users, c.variant) for c in block} == {
            (s, u, v) for s in PAIR for u in (1, 2) for v in variants
        }
        assert all(c.repetition == rep for c in block)
    assert e._options(Cell("bundle-rest", 1, 1, "rows25")).seed == 25
    assert e.describe()["variants"]["rows5"]["seed"] == 5
    # without variants: the one variant and its options, as before
    plain = Experiment("y", stacks=PAIR, users=(1,), options=StackOptions(seed=7), root=tmp_path)
    assert plain.levels() == {"base": StackOptions(seed=7)}
    assert [c.variant for c in plain.cells()] == ["base", "base"]


def test_bad_variants_and_group_loads_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="name at least one"):
        Experiment("x", stacks=PAIR, users=(1,), variants={}, root=tmp_path)
    with pytest.raises(ValueError, match="cannot name a directory"):
        Experiment("x", stacks=PAIR, users=(1,), variants={"a/b": StackOptions()}, root=tmp_path)
    with pytest.raises(ValueError, match="at least one request"):
        GroupLoad(USERS, requests=0)
    with pytest.raises(ValueError, match="must start with IPCLAB_"):
        GroupLoad(USERS, requests=2, env={"PATH": "/"})


def test_a_group_cell_runs_every_stack_at_once(tmp_path: Path) -> None:
    e = Experiment(
        "g", stacks=PAIR, users=(1,), repetitions=2, group=_load(),
        variants={"rows5": StackOptions(), "rows50": StackOptions(seed=3)}, root=tmp_path,
    )  # fmt: skip
    cells = e.cells()
    assert len(cells) == 4 and {c.stack for c in cells} == {"bundle-rest+bundle-graphql"}
    assert cells[0].key.startswith("bundle-rest+bundle-graphql-u1-rows")
    assert e.describe()["group"]["requests"] == 10


def _fake_run(path: Path, e: Experiment, cell: Cell, **override: Any) -> None:
    params = {
        "profile": dataclasses.asdict(e.profile(cell)),
        "options": e._options(cell).as_dict(),
    }
    if e.group is not None:
        params["group"] = {"stacks": list(e.stacks), **e.group.as_dict()}
    params.update(override)
    spec = {n: resolve(n).declaration() for n in e.stacks}
    w = RunWriter(path, "load", params, backend="local", stack_spec=spec)
    w.finish("complete")


def test_reuse_needs_the_variant_options_and_the_same_group(tmp_path: Path) -> None:
    variants = {"rows5": StackOptions(seed=5), "rows25": StackOptions(seed=25)}
    e = Experiment("g", stacks=PAIR, users=(1,), group=_load(), variants=variants, root=tmp_path)
    cells = e.cells()
    for c in cells:
        _fake_run(e.directory / c.key, e, c)
    assert e.pending() == []
    other = dataclasses.replace(e, group=_load(requests=5))
    assert len(other.pending()) == 2  # another schedule: other runs
    swapped = dataclasses.replace(
        e, variants={"rows5": variants["rows25"], "rows25": variants["rows5"]}
    )
    assert len(swapped.pending()) == 2  # the same names, other options


def test_stack_group_prefixes_components_and_names_targets() -> None:
    calls: list[tuple[str, str]] = []

    @dataclasses.dataclass
    class Fake:
        spec: Any
        gateway_url: str

        def sample(self) -> list[dict[str, Any]]:
            return [{"component": "gateway", "kind": "gateway", "cpu_percent": 1.0}]

        def kill(self, role: str) -> None:
            calls.append((self.gateway_url, role))

        def restart(self, role: str) -> None: ...
        def logs(self) -> dict[str, str]:
            return {"gateway": "log"}

        def stop(self) -> None:
            calls.append((self.gateway_url, "stop"))

    stacks = {n: Fake(resolve(n), f"http://h/{n}") for n in PAIR}
    g = StackGroup(stacks, _load(), "local")  # type: ignore[arg-type]
    assert g.spec.name == "bundle-rest+bundle-graphql" and g.spec.users == USERS
    assert g.gateway_url == "http://h/bundle-rest"
    assert [r["component"] for r in g.sample()] == ["bundle-rest/gateway", "bundle-graphql/gateway"]
    env = g.load_env()
    assert (
        env["IPCLAB_TARGETS"]
        == "bundle-rest=http://h/bundle-rest,bundle-graphql=http://h/bundle-graphql"
    )
    assert env["IPCLAB_SCHEDULE_REQUESTS"] == "4"
    g.kill("bundle-graphql/gateway")
    assert calls == [("http://h/bundle-graphql", "gateway")]
    with pytest.raises(ValueError, match="<stack>/<role>"):
        g.kill("gateway")
    assert g.logs() == {"bundle-rest/gateway": "log", "bundle-graphql/gateway": "log"}
    g.stop()
    assert [c for c in calls if c[1] == "stop"] == [(f"http://h/{n}", "stop") for n in PAIR]


def test_compact_requests_keeps_every_record_in_order(tmp_path: Path) -> None:
    folder = tmp_path / "requests"
    folder.mkdir()
    for i in range(3):  # the recorder's columns (importing it would monkey-patch ssl)
        table = pa.table(
            {"t": [i * 10.0, i * 10.0 + 1], "name": [f"n{i}"] * 2, "latency_ms": [1.0, 1.0],
             "bytes": [10, 10], "status": pa.array([200, 200], pa.int32()), "ok": [True, True],
             "error": pa.array([None, None], pa.string()), "server_ms": [0.5, 0.5]}
        )  # fmt: skip
        pq.write_table(table, folder / f"part-{i:05d}.parquet")
    assert compact_requests(tmp_path) == 6
    assert [p.name for p in folder.iterdir()] == ["part-00000.parquet"]
    (tmp_path / "manifest.json").write_text("{}")
    assert read_run(tmp_path).requests()["t"].tolist() == [0, 1, 10, 11, 20, 21]
    assert compact_requests(tmp_path) == 6  # idempotent


def _no_postgres() -> str | None:
    try:
        find_bin_dir()
    except PostgresUnavailable as e:
        return str(e)
    return None


def _closed(url: str) -> bool:
    u = urllib.parse.urlsplit(url)
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((u.hostname or "", u.port or 0)) != 0


@pytest.mark.slow
@pytest.mark.skipif(_no_postgres() is not None, reason=str(_no_postgres()))
def test_a_group_run_interleaves_both_gateways_and_leaves_nothing(tmp_path: Path) -> None:
    from ipclab.backends import local

    opts = StackOptions(extra_env={"IPCLAB_BUNDLE_ROWS": "5"})
    profile = LoadProfile(users=1, spawn_rate=1, duration_s=40, think_time_s=0.01, seed=5)
    out = run_group(PAIR, _load(6, 2), profile, out=tmp_path / "ok", options=opts)
    run = read_run(out)
    assert run.status == "complete" and run.summary["schedule"] == {"recorded": 16, "wanted": 16}
    req = run.requests().sort_values("t")
    assert req["name"].value_counts().to_dict() == {
        "rest": 6, "graphql": 6, "warmup rest": 2, "warmup graphql": 2,
    }  # fmt: skip
    assert req["name"].iloc[:4].str.startswith("warmup ").all()  # warm-up first
    pairs = req["name"].iloc[4:].to_numpy().reshape(-1, 2)
    assert all(set(p) == {"rest", "graphql"} for p in pairs)  # one of each per round
    assert req["ok"].all() and req["server_ms"].notna().all()
    assert len(list((out / "requests").glob("part-*.parquet"))) == 1
    comps = set(run.resources()["component"])
    assert {"bundle-rest/gateway", "bundle-graphql/gateway", "bundle-rest/database"} <= comps
    assert run.manifest["stack"] == "bundle-rest+bundle-graphql"
    assert run.manifest["style"] == "rest+graphql"
    urls = [e["gateway_url"] for e in run.events() if e["event"] == "stack_up"]
    assert len(urls) == 2 and all(_closed(u) for u in urls)
    assert not local._LIVE
    # a schedule that sends fewer requests than the load promised: the run fails, says why
    bad = run_group(PAIR, _load(2, 0, extra=3), profile, out=tmp_path / "bad", options=opts)
    assert read_run(bad).status == "failed"
    assert any(e["event"] == "schedule_incomplete" for e in read_run(bad).events())
    assert not local._LIVE
