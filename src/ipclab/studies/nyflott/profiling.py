"""Nyfløtt's profiling testbed (thesis §4.4, Figs. 8, 9, 17, 18) on the Californium adapters.

The thesis profiled its Californium gateways apart from the load matrix: a client, the
HTTP-to-CoAP gateway, the CoAP-to-HTTP gateway and nginx, one request type, with a sampling
profiler (Fig. 9: a flame graph of the CoAP gateway) and Java VisualVM (Fig. 17: heap size and
used heap over time of the HTTP gateway; Fig. 18: its heap's class histogram, ``byte[]`` at
72%). Here the same views come from the JDK's own tools on ``acmeair-coap-californium`` under
the study's load (local backend, 0 ms): every adapter JVM records a flight recording
(``-XX:StartFlightRecording``, JFR's ``profile`` settings: a stack sample of every running
thread each 10 ms, where the thesis's profiler took one each 100 ms; the heap before and
after every collection), and at the end of the load ``jcmd <pid> GC.class_histogram -all``
lists every object on the heap, unreachable ones included (as a heap dump taken under load
holds them). The CoAP gateway profiled is the busiest ingress (flight's: Query Flight's
answers of several kilobytes, block-wise); the HTTP gateway is the egress.

``python -m ipclab.studies.nyflott.profiling --out DIR [--config thesis|fixed]`` makes one
profile; ``--config`` sets the Californium adapters' logging (``thesis``: every CoAP
message's log text built eagerly, the hotspot Fig. 9 shows; ``fixed``, the default:
Californium 3.11 as it is; services/java/californium Logging.java), recorded in the load
run's manifest (its options and each adapter's runtime report). Its tables (``flame.csv``:
folded stacks and their samples; ``hotspot.csv``: per 5 s the CoAP gateway's samples and
those in Fig. 9's hotspot, ``hotspot.py``; ``heap.csv``: the heap per collection;
``histogram.csv``: the largest classes) are what the figures read, and what a reference
keeps (the ``.jfr`` files are not committed). A reference keeps the fixed profile in
``profiling/`` and the thesis's in ``profiling-thesis/``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ipclab.backends import get_backend
from ipclab.backends.base import StackOptions
from ipclab.backends.described import runtimes
from ipclab.load import runner
from ipclab.stacks import resolve
from ipclab.studies.nyflott import hotspot
from ipclab.studies.nyflott.experiment import LOGGING_CONFIGS, logging_options

STACK = "acmeair-coap-californium"
HTTP_GATEWAY = "egress"  # Figs. 17 and 18
COAP_GATEWAY = "flight-ingress"  # Fig. 9
JVM_OPTIONS = "IPCLAB_JVM_OPTIONS"
HISTOGRAM_ROWS = 20


@dataclass(frozen=True)
class ProfilePlan:
    """One profile: the study's users for ``duration_s`` after ``warmup_s``."""

    users: int = 10
    duration_s: float = 70.0  # the warm-up included
    warmup_s: float = 10.0
    seed: int = 1
    config: str = "fixed"  # the Californium adapters' logging: thesis or fixed


def recording_options(directory: Path) -> str:
    """The JVM flags of a flight recording per adapter JVM into ``directory``, one file per
    role (``{role}``: the native adapter puts its role there; JDK 17's JFR does not expand
    ``%p``), written when the JVM exits."""
    return (
        "-XX:StartFlightRecording=settings=profile,dumponexit=true,"
        f"filename={directory}/{{role}}.jfr"
    )


def _jdk_tool(name: str) -> str:
    tool = shutil.which(name)
    if tool is None:
        raise RuntimeError(f"{name} is not installed: the JDK's tools are needed to profile "
                           "(apt-get install openjdk-17-jdk-headless)")  # fmt: skip
    return tool


def class_histogram(pid: int) -> str:
    """Every object on the JVM's heap by class (unreachable ones too), as jcmd prints it."""
    out = subprocess.run([_jdk_tool("jcmd"), str(pid), "GC.class_histogram", "-all"],
                         capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    return out.stdout


def run_profile(plan: ProfilePlan, out: Path, progress: Callable[[str], None] = print) -> Path:
    """One profile into the new folder ``out``: the load's run directory (``load/``), every
    adapter JVM's recording (``jfr/``) and the two gateways' class histograms; then the
    tables the figures read."""
    out = Path(out)
    out.mkdir(parents=True)
    # the JVMs write their recordings where every user may (a root harness's adapters run
    # as nobody, services/adapters/native.py); they are moved into ``out/jfr`` afterwards
    spool = Path(tempfile.mkdtemp(prefix="ipclab-jfr-"))
    try:
        spool.chmod(0o777)
        _profile(plan, out, spool, progress)
    finally:
        (out / "jfr").mkdir(exist_ok=True)
        for recording in spool.glob("*.jfr"):
            shutil.move(recording, out / "jfr" / recording.name)
        shutil.rmtree(spool, ignore_errors=True)
        _no_machine_paths(out / "load" / "manifest.json", spool)
    write_tables(out)
    return out


def _no_machine_paths(manifest: Path, spool: Path) -> None:
    """The scratch folder's path (a name on this machine, gone now) written as ``<spool>``
    in the load run's manifest (its flags and options), which a reference commits."""
    if manifest.is_file():
        manifest.write_text(manifest.read_text().replace(str(spool), "<spool>"))


def _profile(plan: ProfilePlan, out: Path, spool: Path, progress: Callable[[str], None]) -> None:
    """The load on a stack whose adapter JVMs record into ``spool``; the two gateways'
    class histograms at its end."""
    options = logging_options(
        plan.config, StackOptions(extra_env={JVM_OPTIONS: recording_options(spool)})
    )
    stack = get_backend("local").start(resolve(STACK), options)
    try:
        profile = runner.LoadProfile(
            users=plan.users, duration_s=plan.duration_s, warmup_s=plan.warmup_s,
            seed=plan.seed,
        )  # fmt: skip
        progress(f"profiling {STACK} ({plan.config} logging): {plan.users} users, "
                 f"{plan.duration_s:g} s")  # fmt: skip
        runner.run(STACK, profile, backend="local", options=options, out=out / "load",
                   stack=stack, extra={"profiling": asdict(plan)})  # fmt: skip
        pids = {role: int(doc["pid"]) for role, doc in runtimes(stack.logs()).items()}
        for role in (HTTP_GATEWAY, COAP_GATEWAY):
            (out / f"histogram-{role}.txt").write_text(class_histogram(pids[role]))
        (out / "pids.json").write_text(json.dumps(pids, indent=1))
    finally:
        stack.stop()  # the JVMs exit: their recordings are written


def unavailable() -> str | None:
    """Why no profile can be made here (the Californium adapters or the JDK's tools), or
    None."""
    missing = [t for t in ("jcmd", "jfr") if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (apt-get install openjdk-17-jdk-headless)"
    return resolve(STACK).unavailable()


def ensure_profile(directory: Path, progress: Callable[[str], None] = print) -> Path | None:
    """The profile in ``directory``, made first when its tables are missing (a profile cut
    short is made again); None, saying why, where none can be made here."""
    directory = Path(directory)
    if all((directory / f"{n}.csv").exists() for n in ("flame", "heap", "histogram")):
        return directory
    if why := unavailable():
        progress(f"profiling skipped: {why}")
        return None
    shutil.rmtree(directory, ignore_errors=True)
    return run_profile(ProfilePlan(), directory, progress)


# --------------------------------------------------------------------------- tables


#: frames per stack ``jfr print`` writes: all JFR records (its stackdepth, 64); ``jfr print``'s
#: own default, 5, kept only the 5 frames nearest the leaf, too few to see what called them
STACK_DEPTH = 64


def _jfr_events(recording: Path, event: str) -> list[dict]:
    out = subprocess.run([_jdk_tool("jfr"), "print", "--json", "--stack-depth",
                          str(STACK_DEPTH), "--events", event, str(recording)],
                         capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    return list(json.loads(out.stdout)["recording"]["events"])


def _frame(f: dict) -> str:
    method = f.get("method") or {}
    cls = (method.get("type") or {}).get("name", "?")
    return f"{cls}.{method.get('name', '?')}"


def execution_samples(recording: Path) -> pd.DataFrame:
    """The recording's execution samples: each one's time (s from the first) and folded
    stack (root first, ``;`` between frames)."""
    times, stacks = [], []
    for e in _jfr_events(recording, "jdk.ExecutionSample"):
        frames = (e["values"].get("stackTrace") or {}).get("frames") or []
        stacks.append(";".join(_frame(f) for f in reversed(frames)))
        times.append(e["values"].get("startTime"))
    t = pd.to_datetime(pd.Series(times, dtype=object), utc=True, format="ISO8601")
    return pd.DataFrame({"t_s": (t - t.min()).dt.total_seconds(), "stack": stacks})


def fold(samples: pd.DataFrame) -> pd.DataFrame:
    """Samples as folded stacks and how many samples each has, the most first."""
    counts = samples.groupby("stack").size()
    out = pd.DataFrame({"stack": counts.index.astype(str), "samples": counts.to_numpy()})
    return out.sort_values(["samples", "stack"], ascending=[False, True], ignore_index=True)


def folded_stacks(recording: Path) -> pd.DataFrame:
    """The recording's execution samples as folded stacks (:func:`fold`)."""
    return fold(execution_samples(recording))


def heap_series(recording: Path) -> pd.DataFrame:
    """The heap before and after every collection: used and committed bytes over time."""
    rows = []
    for e in _jfr_events(recording, "jdk.GCHeapSummary"):
        v = e["values"]
        rows.append({"time": v["startTime"], "when": v["when"],
                     "used_bytes": int(v["heapUsed"]),
                     "committed_bytes": int(v["heapSpace"]["committedSize"]),
                     "reserved_bytes": int(v["heapSpace"]["reservedSize"])})  # fmt: skip
    out = pd.DataFrame(rows)
    if len(out):
        t = pd.to_datetime(out["time"], utc=True, format="ISO8601")
        out.insert(0, "t_s", (t - t.min()).dt.total_seconds())
    return out


_HISTO = re.compile(r"^\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)")


def histogram_table(text: str, rows: int = HISTOGRAM_ROWS) -> pd.DataFrame:
    """jcmd's class histogram as the thesis's Fig. 18: class, instances, bytes and each one's
    share of the whole heap, the largest ``rows`` classes."""
    found = [(m.group(3), int(m.group(1)), int(m.group(2)))
             for m in map(_HISTO.match, text.splitlines()) if m]  # fmt: skip
    t = pd.DataFrame(found, columns=["class", "instances", "bytes"])
    if t.empty:
        return t
    t["instances_pct"] = 100 * t["instances"] / t["instances"].sum()
    t["bytes_pct"] = 100 * t["bytes"] / t["bytes"].sum()
    return t.sort_values("bytes", ascending=False, ignore_index=True).head(rows)


def write_tables(out: Path) -> None:
    """``flame.csv`` (the CoAP gateway's stacks), ``heap.csv`` (the HTTP gateway's heap) and
    ``histogram.csv`` (its classes) from the recordings and histograms in ``out``."""
    recording = {r: out / "jfr" / f"{r}.jfr" for r in (HTTP_GATEWAY, COAP_GATEWAY)}
    samples = execution_samples(recording[COAP_GATEWAY])
    fold(samples).to_csv(out / "flame.csv", index=False)
    hot = samples.assign(hot=samples["stack"].map(hotspot.in_hotspot))
    hotspot.batches(hot).to_csv(out / "hotspot.csv", index=False)
    heap_series(recording[HTTP_GATEWAY]).to_csv(out / "heap.csv", index=False)
    text = (out / f"histogram-{HTTP_GATEWAY}.txt").read_text()
    histogram_table(text).to_csv(out / "histogram.csv", index=False)


# --------------------------------------------------------------------------- figures


def flame_figure(folded: pd.DataFrame, min_share: float = 0.005, config: str = "") -> plt.Figure:
    """Fig. 9: a flame graph (x: share of samples, y: stack depth, root at the bottom);
    frames under ``min_share`` of the samples left out, labels where they fit; the frames
    of Fig. 9's hotspot (:data:`hotspot.HOTSPOT`) outlined in blue; ``config``: the
    logging configuration, in the title."""
    total = float(folded["samples"].sum())
    tree: dict = {}
    for stack, n in zip(folded["stack"], folded["samples"], strict=True):
        node = tree
        for frame in str(stack).split(";"):
            child = node.setdefault(frame, {"n": 0, "kids": {}})
            child["n"] += int(n)
            node = child["kids"]
    fig, ax = plt.subplots(figsize=(11, 6))
    depth_max = 0

    def draw(nodes: dict, x0: float, depth: int) -> None:
        nonlocal depth_max
        x = x0
        for name, node in sorted(nodes.items()):
            w = node["n"] / total
            if w >= min_share:
                depth_max = max(depth_max, depth)
                shade = 0.3 + 0.5 * (zlib.crc32(name.encode()) % 7) / 7  # colour: no meaning
                hot = hotspot.in_hotspot(name)
                ax.barh(depth, w, left=x, height=0.9, color=plt.cm.YlOrRd(shade),
                        edgecolor="tab:blue" if hot else "white",
                        linewidth=1.2 if hot else 0.3)  # fmt: skip
                if w > 0.06:
                    short = name.rsplit(".", 2)[-2:]
                    label = ".".join(short)[: int(w * 160)].replace("$", r"\$")  # Java's A$B
                    ax.text(x + 0.003, depth, label, va="center", fontsize=6)
                draw(node["kids"], x, depth + 1)
            x += w

    draw(tree, 0.0, 0)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.5, depth_max + 0.5)
    ax.set_xlabel("share of samples")
    ax.set_ylabel("stack depth")
    what = f", {config} logging" if config else ""
    ax.set_title(f"{COAP_GATEWAY} (Californium{what}): {int(total):,} samples")
    return fig


def heap_figure(heap: pd.DataFrame) -> plt.Figure:
    """Fig. 17: the heap's committed size and its used part (garbage included) over time."""
    fig, ax = plt.subplots(figsize=(8, 3.5))
    mb = 1 << 20
    ax.plot(heap["t_s"], heap["committed_bytes"] / mb, label="heap size (committed)")
    ax.fill_between(heap["t_s"], heap["used_bytes"] / mb, step="post", alpha=0.4,
                    label="used heap")  # fmt: skip
    ax.set_xlabel("time (s)")
    ax.set_ylabel("MiB")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(f"{HTTP_GATEWAY} (Californium): heap per collection")
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="a new folder for the profile")
    p.add_argument("--seconds", type=float, default=ProfilePlan.duration_s)
    p.add_argument("--config", choices=LOGGING_CONFIGS, default=ProfilePlan.config,
                   help="the Californium adapters' logging: the thesis's (eager log text, "
                   "Fig. 9's hotspot) or fixed (Californium 3.11 as it is)")  # fmt: skip
    a = p.parse_args(argv)
    out = run_profile(ProfilePlan(duration_s=a.seconds, config=a.config), a.out)
    print(out)
    print(hotspot_summary(out, a.config))
    return 0


def hotspot_summary(directory: Path, config: str) -> str:
    """The profile's hotspot share with its interval and the samples its target needs."""
    s = hotspot.share_of(pd.read_csv(Path(directory) / "hotspot.csv"))
    need = hotspot.share_table({config: s})["samples_needed"].iloc[0]
    return (f"{config}: Fig. 9's hotspot {s.share:.1%} of {s.samples} samples "
            f"[{s.low:.1%}, {s.high:.1%}] (design effect {s.design_effect:.2f}); "
            f"+-{hotspot.HALF_WIDTH:.0%} needs {need} samples")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
