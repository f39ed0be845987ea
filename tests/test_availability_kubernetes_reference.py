"""The Kubernetes availability reference (issue 51) rebuilds like local's and docker's: from
synthetic Kubernetes fault-injection runs (the committed docker runs, with what the
kubernetes runner writes instead: the restart marked at the kill by the orchestrator, the
kubelet's record of each restart, the pods' resources in ``stack_info``), the rebuild
writes the folder's tables, its recovery decomposed beside the local and docker
references' (the kubelet's restart and its back-off), the cluster's deviations and a README
with its generated blocks. No cluster, no stack: files only."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ipclab import plotting
from ipclab.paths import REPO_ROOT
from ipclab.studies.shafabakhsh import reference
from ipclab.studies.shafabakhsh.availability import beside

REFERENCE = REPO_ROOT / "data" / "runs" / "reference"
FOLDER = "availability-full-kubernetes"
NODE = "ipclab-node-1"
FIRST_S, AGAIN_S, READY_S = 0.3, 2.0, 0.4  # kill -> process start (first / again), -> ready


def _no_figure(fig: object, name: str, directory: object = None, **_: object) -> list[Path]:
    return [Path(f"{name}.png")]


def _stack_info(manifest: dict[str, Any], limits: bool) -> dict[str, Any]:
    members = ["gateway", *manifest["stack_spec"]["services"]]
    if manifest["style"] == "amqp":
        members.append("broker")
    res = {"limits": {"cpu": "500m", "memory": "256Mi"},
           "requests": {"cpu": "100m", "memory": "256Mi"}}  # fmt: skip
    limited = {m: (res if limits and m != "broker" else {}) for m in members}
    qos = {m: ("Burstable" if limited[m] else "BestEffort") for m in members}
    return {
        "kubernetes": {
            "server": "v1.34.4", "ipclab_cluster": True, "namespace": "ipclab-x",
            "node_port": 30080, "nodes": {m: NODE for m in members}, "images": {},
            "limits": {"cpus": 0.5 if limits else None, "memory_mb": 256 if limits else None},
            "resources": limited, "qos": qos,
        }
    }  # fmt: skip


def _as_kubernetes(src: Path, dst: Path) -> None:
    """A docker fault-injection run as the kubernetes runner writes one: each restart
    marked at its kill by the orchestrator, the kubelet's exit, start and pod-Ready
    records (whole seconds, with the restart count), the kernel's process start and the
    role's ready line, inside the recorded down time; a component killed again in its run
    starts later (its back-off, scaled into the docker run's down time)."""
    shutil.copytree(src, dst)
    manifest = json.loads((dst / "manifest.json").read_text())
    manifest["backend"] = manifest["parameters"]["backend"] = "kubernetes"
    manifest["parameters"]["experiment"] = FOLDER
    manifest["stack_info"] = _stack_info(manifest, limits=False)
    (dst / "manifest.json").write_text(json.dumps(manifest, indent=2))
    cycles = pd.read_csv(dst / "cycles.csv")
    old = [json.loads(line) for line in (dst / "events.jsonl").read_text().splitlines()]
    events = [e for e in old if e["event"] not in ("restart", "restarted", "ready")]
    kills: dict[str, int] = {}
    for i, c in cycles.iterrows():
        if c["status"] != "recovered" or not math.isfinite(c["t_fault"]):
            continue
        role, kill = str(c["component"]), float(c["t_fault"])
        kills[role] = kills.get(role, 0) + 1
        mark = kill - 0.001
        start = kill + (FIRST_S if kills[role] == 1 else AGAIN_S)
        ready = start + READY_S
        assert ready < c["t_recovered"], (dst.name, i)
        rec = {"role": role, "pod": f"{role}-0", "restart_count": kills[role],
               "source": "kubelet", "resolution_s": 1.0}  # fmt: skip
        events += [
            {"t": mark, "event": "restart", "role": role, "by": "orchestrator"},
            {"event": "container_exited", "t": float(math.floor(kill)), **rec, "exit_code": 137,
             "reason": "Error"},
            {"event": "container_started", "t": float(math.floor(start)), **rec},
            {"event": "pod_ready", "t": float(math.floor(ready)), **rec},
            {"event": "process_started", "t": start, "role": role, "source": "cgroup"},
            {"event": "ready", "t": ready, "role": role, "source": "log"},
            {"t": ready + 0.05, "event": "restarted", "role": role},
        ]  # fmt: skip
        cycles.loc[i, "t_restart"] = mark
        cycles.loc[i, "restart_to_recovery_s"] = c["t_recovered"] - mark
    cycles.to_csv(dst / "cycles.csv", index=False)
    events.sort(key=lambda e: e["t"])
    (dst / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reference")
    for backend in ("local", "docker"):  # the references it is set beside: their runs
        folder = REFERENCE / f"availability-full-{backend}"
        for run in folder.glob("fault_injection-*"):
            shutil.copytree(run, root / folder.name / run.name)
    docker = REFERENCE / "availability-full-docker"
    for run in sorted(docker.glob("fault_injection-*")):
        _as_kubernetes(run, root / FOLDER / run.name)
    mp = pytest.MonkeyPatch()
    mp.setattr(plotting, "save", _no_figure)
    try:
        reference.rebuild_availability("kubernetes", root=root, figures=root / "figures")
    finally:
        mp.undo()
    return root / FOLDER


def test_the_kubernetes_folder_rebuilds_with_its_tables_and_a_title_of_what_it_holds(
    rebuilt: Path,
) -> None:
    results = rebuilt / "results"
    for name in ("availability_fault_injection", "summary_fault_injection", "cycles", "recovery",
                 "recovery_configuration", "recovery_backends", "claims", "power",
                 "claims_mttr_fault_injection", "plausibility", "environment"):  # fmt: skip
        assert (results / f"{name}.csv").is_file(), name
    assert not (results / "claims_mttr_outage.csv").exists()  # no outage run on Kubernetes
    study = json.loads((results / "study.json").read_text())
    assert study["title"] == (
        "Shafabakhsh 2020: availability (full profile: fault injection, kubernetes)"
    )
    fi = pd.read_csv(results / "availability_fault_injection.csv")
    assert list(fi["style"]) == ["rest", "grpc", "amqp"] and (fi["failures"] == 40).all()
    rec = pd.read_csv(results / "recovery.csv")
    assert {"kubelet_restart_s", "readiness_s"} <= set(rec.columns)
    assert (rec["reaction_s"] < 0).all()  # the kubelet does not wait for the detection
    claims = pd.read_csv(results / "claims_mttr_fault_injection.csv")
    assert (claims["n_a"] == 5).all()  # one MTTR per default run


def test_the_recovery_decomposition_sets_kubernetes_beside_local_and_docker(
    rebuilt: Path,
) -> None:
    t = pd.read_csv(rebuilt / "results" / "recovery_backends.csv")
    for b in ("local", "docker", "kubernetes"):
        assert {f"{b}_s", f"{b}_lo", f"{b}_hi", f"{b}_runs", f"{b}_cycles"} <= set(t.columns)
    assert list(t.columns[:2]) == ["style", "part"]
    assert list(dict.fromkeys(t["style"])) == ["rest", "grpc", "amqp"]
    assert list(t["part"].iloc[: len(beside.PARTS)]) == [name for _, name in beside.PARTS]
    row = t.set_index(["style", "part"])
    first, again = beside.PARTS[2][1], beside.PARTS[3][1]
    for style in ("rest", "grpc", "amqp"):
        # the kubelet's restart: the synthetic process starts, to the kill; 5 runs each
        assert row.loc[(style, first), "kubernetes_s"] == pytest.approx(FIRST_S, abs=2e-3)
        assert row.loc[(style, again), "kubernetes_s"] == pytest.approx(AGAIN_S, abs=2e-3)
        assert row.loc[(style, "readiness"), "kubernetes_s"] == pytest.approx(READY_S, abs=1e-6)
        for b in ("local", "docker", "kubernetes"):
            r = row.loc[(style, "detection")]
            assert r[f"{b}_runs"] == 5 and r[f"{b}_lo"] <= r[f"{b}_s"] <= r[f"{b}_hi"]
        # restart + readiness + reconnect is the thesis's MTTR on every backend
        for b in ("local", "docker", "kubernetes"):
            parts = sum(row.loc[(style, p), f"{b}_s"] for p in ("restart", "readiness",
                                                                  "reconnect"))  # fmt: skip
            mttr = row.loc[(style, "restart to recovery (the thesis's MTTR)"), f"{b}_s"]
            assert parts == pytest.approx(mttr, rel=1e-9)
    # the docker reference's own values, as its recovery.csv has them (the same runs)
    docker = pd.read_csv(REFERENCE / "availability-full-docker/results/recovery.csv")
    service = docker[(docker["method"] == "fault_injection") & (docker["reconnect"] == "default")]
    assert service["detection_s"].between(1.5, 3.0).all()
    study = json.loads((rebuilt / "results" / "study.json").read_text())
    caption = next(t["caption"] for t in study["tables"] if t["name"] == "recovery_backends")
    assert "back-off (10 s, then 20 s" in caption and "part of the Kubernetes MTTR" in caption


def test_the_kubernetes_deviations_are_in_study_json(rebuilt: Path) -> None:
    study = json.loads((rebuilt / "results" / "study.json").read_text())
    text = " ".join(study["deviations"])
    for said in ("Kubernetes v1.34.4", "1.14.8", "Azure Kubernetes Service", f"1 node ({NODE})",
                 "no cluster DNS", "etcd without fsync", "no requests or limits (QoS BestEffort)",
                 "CPU requested is 100m", "outage experiment is not run",
                 "kubelet's back-off is kept"):  # fmt: skip
        assert said in text, said
    local = json.loads((REFERENCE / "availability-full-local/results/study.json").read_text())
    assert set(local["deviations"]) < set(study["deviations"])  # the common ones, and more


def test_the_readme_is_written_with_its_generated_blocks(rebuilt: Path) -> None:
    text = (rebuilt / "README.md").read_text()
    assert text.startswith("# Availability, full profile, kubernetes backend: fault injection")
    for block in ("fault-injection", "recovery", "recovery-backends", "power"):
        assert f"<!-- generated: {block} -->\n|" in text or f"<!-- generated: {block} -->\n" in text
    assert "<!-- generated: until-failure -->" not in text
    assert "<!-- findings: results/claims_mttr_fault_injection.csv -->\nGenerated" in text
    beside_block = text.split("<!-- generated: recovery-backends -->")[1].split("<!-- /gen")[0]
    assert "| style | part | local | docker | kubernetes |" in beside_block
    assert "killed again in its run on kubernetes" in beside_block
    assert "part of the Kubernetes MTTR" in beside_block


def test_pod_resources_per_method_from_the_manifests() -> None:
    from ipclab.studies.shafabakhsh.availability.profiles import pod_resources

    m = {"style": "amqp", "stack_spec": {"services": ["cart"]}}
    fi = {"method": "fault_injection", "stack_info": _stack_info(m, limits=False)}
    m1 = {"method": "until_failure", "stack_info": _stack_info(m, limits=True)}
    said = pod_resources([fi, m1, m1])
    assert said.startswith(
        "fault injection (1 runs), every container: no requests or limits (QoS BestEffort)"
    )
    assert ("method 1 (2 runs), broker: no requests or limits (QoS BestEffort); cart, gateway: "
            "requests cpu 100m, memory 256Mi; limits cpu 500m, memory 256Mi (QoS Burstable)"
            ) in said  # fmt: skip


def test_the_title_names_the_methods_held(tmp_path: Path) -> None:
    for name in ("fault_injection-shop-rest-u50-r1", "until_failure-shop-rest-u200-r1"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text("{}")
    (tmp_path / "outage-shop-rest-u50-r1").mkdir()  # no manifest: not a run
    methods = reference.availability_methods(tmp_path)
    assert methods == ("fault_injection", "until_failure")
    assert reference.availability_title("kubernetes", methods) == (
        "Shafabakhsh 2020: availability (full profile: fault injection and method 1, kubernetes)"
    )


def test_a_masked_kill_counts_towards_the_components_kills() -> None:
    """The kubelet restarts a killed container whether the probe saw the failure or not, so a
    component's second failure after a masked first kill is its second kill (back-off)."""
    from ipclab.availability.model import Cycle, CycleStatus
    from ipclab.studies.shafabakhsh.availability.analysis import _kill_numbers

    def cycle(index: int, component: str, t_fail: float) -> Cycle:
        return Cycle(
            index=index, status=CycleStatus.RECOVERED, t_up=t_fail - 5, ttf_s=5.0, ttr_s=3.0,
            t_fail=t_fail, t_fail_detected=t_fail + 2, component=component, t_restart=t_fail,
            t_recovered=t_fail + 3, restart_to_recovery_s=3.0,
        )  # fmt: skip

    events = [
        {"t": 1.0, "event": "kill", "role": "cart"},  # masked: no failure seen
        {"t": 10.0, "event": "kill", "role": "cart"},
        {"t": 20.0, "event": "kill", "role": "reviews"},
    ]
    cycles = [cycle(0, "cart", 10.1), cycle(1, "reviews", 20.1)]
    assert _kill_numbers(cycles, events) == {0: 2, 1: 1}
    assert _kill_numbers(cycles, []) == {0: 1, 1: 1}  # no kill events: the cycles' own order
