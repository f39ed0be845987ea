"""The ``ipclab`` command: studies, stacks, up, down, run, reproduce, cluster, compare (and
helpers)."""

from __future__ import annotations

import argparse
import re
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ipclab.backends import BACKENDS, StackOptions, all_backends, get_backend
from ipclab.backends.base import TLS_EDGE
from ipclab.stacks import UnknownStack, all_stacks, resolve
from ipclab.studies import UnknownStudy, all_studies

_NUM = r"(\d+(?:\.\d+)?)"


def duration(text: str) -> float:
    """'30s', '2m', '1m30s', '1h30m', '45' (plain seconds) -> seconds. Every part of a
    compound duration carries its unit: '1h30' is refused, not read as 1 h 30 s."""
    t = text.strip()
    if re.fullmatch(_NUM, t):
        return float(t)
    m = re.fullmatch(rf"(?:{_NUM}h)?(?:{_NUM}m)?(?:{_NUM}s)?", t)
    if not t or m is None or not any(m.groups()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 30s, 2m or 1m30s")
    h, mnt, s = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mnt * 60 + s


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return value


def non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number >= 0")
    return value


def _check_stack_options(a: argparse.Namespace) -> None:
    """Options a backend cannot honour are refused, not silently ignored (each backend's
    plugin says which it honours: ``BackendPlugin.supports``)."""
    given = [
        option
        for option, value in (
            ("cpus", getattr(a, "cpus", None)),
            ("memory", getattr(a, "memory", None)),
            ("delay-ms", getattr(a, "delay_ms", 0.0) or None),
            ("pin", getattr(a, "pin", None)),
            ("tls", _tls_level(a)),
            ("detach", getattr(a, "detach", False) or None),
            ("store", "db" if getattr(a, "store", "memory") == "db" else None),
        )
        if value is not None
    ]
    _refuse_unsupported(a.backend, given)


def _refuse_unsupported(backend: str, options: list[str]) -> None:
    """A ValueError naming the ``options`` (flags) the ``backend`` does not honour."""
    plugins = all_backends()
    refused = [o for o in options if not plugins[backend].supports(o)]
    if not refused:
        return
    honour = [name for name, p in plugins.items() if all(p.supports(o) for o in refused)]
    where = (
        f"{' and '.join([', '.join(honour[:-1]), honour[-1]] if len(honour) > 1 else honour)} "
        f"backend{'s' if len(honour) > 1 else ''} only"
        if honour
        else "no backend honours them together"
    )
    flags = ", ".join(f"--{o}" for o in refused)
    raise ValueError(f"{flags}: {where} (not the {backend} backend)")


def _stack_options(a: argparse.Namespace) -> StackOptions:
    _check_stack_options(a)
    return StackOptions(
        seed=a.seed,
        sequential=a.sequential,
        call_timeout_s=a.call_timeout,
        cpus=getattr(a, "cpus", None),
        memory_mb=getattr(a, "memory", None),
        delay_ms=getattr(a, "delay_ms", 0.0),
        tls=_tls_level(a),
        store="db" if getattr(a, "store", "memory") == "db" else None,
    )


def _tls_level(a: argparse.Namespace) -> bool | str | None:
    """``StackOptions.tls``: None (plain), True (``--tls``: every hop) or "edge"
    (``--tls-hops edge``: HTTPS to the gateway only; ``--tls-hops all`` is ``--tls``)."""
    hops = getattr(a, "tls_hops", None)
    if hops == TLS_EDGE:
        return TLS_EDGE
    return True if getattr(a, "tls", False) or hops == "all" else None


def _add_stack_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("stack", help="stack name (see `ipclab stacks`)")
    p.add_argument("--backend", choices=BACKENDS, default="local")
    p.add_argument("--seed", type=int, default=42, help="data seed (same data in every style)")
    p.add_argument(
        "--sequential",
        action="store_true",
        help="gateway calls the five services one after another (default: concurrently)",
    )
    p.add_argument(
        "--call-timeout",
        type=positive,
        default=2.0,
        metavar="S",
        help="gateway -> service deadline in seconds (then 504)",
    )
    p.add_argument("--cpus", type=positive, help="CPU limit per container (docker backend)")
    p.add_argument("--memory", type=int, metavar="MB", help="memory limit per container (docker)")
    p.add_argument(
        "--delay-ms",
        type=non_negative,
        default=0.0,
        help="delay per container, each hop between containers once (docker backend)",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="TLS on every hop: HTTPS to the gateway, each service hop in its style's TLS, "
        "AMQPS to the broker (a private authority per start; shop stacks, not CoAP)",
    )
    p.add_argument(
        "--store",
        choices=("memory", "db"),
        default="memory",
        help="where the shop's services read their data: the generator in memory, or their "
        "stores (FerretDB and MariaDB, private, seeded from the generator; the stacks that "
        "declare stores: the shop's, local backend)",
    )
    p.add_argument(
        "--tls-hops",
        choices=("all", TLS_EDGE),
        help="which hops TLS covers (implies --tls): all (as --tls) or edge, HTTPS from the "
        "load generator to the gateway only, the gateway's calls in the clear (the thesis's)",
    )


def cmd_stacks(a: argparse.Namespace) -> int:
    for name, spec in all_stacks().items():
        print(f"{name}\t{spec.description}" if a.verbose else name)
    return 0


def cmd_studies(a: argparse.Namespace) -> int:
    for name, study in all_studies().items():
        notebooks = ", ".join(nb.file for nb in study.notebooks)
        print(f"{name}\t{study.title}\t{notebooks}" if a.verbose else name)
    return 0


def cmd_runs(a: argparse.Namespace) -> int:
    from ipclab import runindex

    a.root = a.root or [Path("data/runs")]
    try:
        table = runindex.select(runindex.index(a.root), runindex.parse_where(a.where))
    except ValueError as e:
        raise SystemExit(f"ipclab runs: {e}") from None
    columns = list(runindex.COLUMNS) if a.all else list(runindex.SHOWN)
    if a.csv:
        print(table[columns].to_csv(index=False), end="")
    elif table.empty:
        print("no run matches")
    else:
        print(table[columns].to_string(index=False, max_colwidth=90))
        print(f"{len(table)} runs")
    return 0


def cmd_compare(a: argparse.Namespace) -> int:
    from ipclab import compare

    try:
        c = compare.compare(a.a, a.b)
    except compare.CompareError as e:
        raise SystemExit(f"ipclab compare: {e}") from None
    print(compare.text(c), end="")
    if a.csv:
        for path in compare.write_csv(c, a.csv):
            print(f"wrote {path}")
    if a.markdown:
        a.markdown.write_text(compare.markdown(c))
        print(f"wrote {a.markdown}")
    return 0


def _add_compare_parser(sub: Any) -> None:
    p = sub.add_parser(
        "compare", help="two run sets cell by cell: B/A with its interval, and whether they agree"
    )
    p.add_argument("a", type=Path, help="run folder A (e.g. a reference folder)")
    p.add_argument("b", type=Path, help="run folder B (another reference, or a fresh run)")
    p.add_argument(
        "--csv",
        type=Path,
        metavar="FILE",
        help="write the cells to FILE (and the claims to FILE's stem + _claims.csv)",
    )
    p.add_argument("--markdown", type=Path, metavar="FILE", help="write the comparison as Markdown")
    p.set_defaults(func=cmd_compare)


def cmd_compose(a: argparse.Namespace) -> int:
    from ipclab.backends.docker.compose import compose_text, write_logins

    spec = resolve(a.stack)
    logins = None
    if a.files is not None:  # the infrastructure's files, and a document that names them
        folder = Path(a.files).resolve()
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise SystemExit(f"ipclab compose: --files {a.files}: give a new or empty folder")
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        logins = write_logins(spec, folder)
    print(compose_text(spec, logins=logins), end="")
    return 0


def cmd_up(a: argparse.Namespace) -> int:
    spec = resolve(a.stack)
    backend = get_backend(a.backend)
    try:
        stack = backend.start(spec, _stack_options(a), detached=a.detach)
    except FileExistsError as e:  # a stack of that name is up already
        print(e, file=sys.stderr)
        return 1
    print(stack.gateway_url, flush=True)
    if a.detach:
        print(
            f"{spec.name} is up in the background; stop it with: ipclab down {spec.name}"
            + (f" --backend {a.backend}" if a.backend != "local" else "")
        )
        return 0
    print(f"{spec.name} is up; Ctrl-C stops it", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()
    return 0


def cmd_down(a: argparse.Namespace) -> int:
    spec = resolve(a.stack)
    stopped = all_backends()[a.backend].down(spec.name)  # the backend plugin's own
    print(f"{spec.name} stopped" if stopped else f"{spec.name} was not up")
    return 0


def cmd_run(a: argparse.Namespace) -> int:
    from ipclab.load.runner import Fault, LoadProfile, run

    if a.think_time_max is not None and a.think_time_max < a.think_time:
        raise ValueError(
            f"--think-time-max {a.think_time_max:g} is below --think-time {a.think_time:g}"
        )

    stack_cpus, load_cpus = _pin(a.pin, a.backend)
    profile = LoadProfile(
        users=a.users,
        spawn_rate=a.spawn_rate,
        duration_s=a.duration,
        think_time_s=a.think_time,
        think_time_max_s=a.think_time_max,
        warmup_s=a.warmup,
        seed=a.load_seed,
        cpuset=load_cpus,
    )
    faults = [Fault.parse(f) for f in a.fault]
    options = _stack_options(a)
    options.cpuset = stack_cpus
    run_dir = run(
        a.stack,
        profile,
        backend=a.backend,
        options=options,
        out=a.out,
        root=a.runs_root,
        faults=faults,
        workers=a.workers,
    )
    from ipclab.runs import read_run

    s = read_run(run_dir).summary
    lat = s.get("latency_ms") or {}
    print(
        f"{a.stack}: {s.get('requests')} requests, {s.get('failures')} failures, "
        f"{s.get('rps')} req/s, latency ms mean {lat.get('mean')} p50 {lat.get('p50')} "
        f"p99 {lat.get('p99')}"
        + ("  [LOAD GENERATOR SATURATED]" if s.get("loadgen_saturated") else ""),
        file=sys.stderr,
    )
    print(run_dir)
    return 0


def _pin(text: str | None, backend: str) -> tuple[str | None, str | None]:
    """``--pin STACK:LOAD`` -> the two CPU lists, checked: both exist here, none shared."""
    if text is None:
        return None, None
    _refuse_unsupported(backend, ["pin"])
    from ipclab.procs import format_cpus, parse_cpus

    stack, sep, load = text.partition(":")
    if not sep:
        raise ValueError(f"--pin {text!r}: give STACK:LOAD CPU lists, e.g. 0:1")
    s, g = parse_cpus(stack), parse_cpus(load)
    if s & g:
        raise ValueError(f"--pin {text!r}: the stack and the load share CPU {format_cpus(s & g)}")
    return format_cpus(s), format_cpus(g)


def cmd_worker(a: argparse.Namespace) -> int:
    """A Locust worker for a master on another machine; runs until the master ends the test."""
    import subprocess

    from ipclab.load.runner import worker_argv

    spec = resolve(a.stack)
    return subprocess.call(worker_argv(spec.users, a.master))


def cmd_reproduce(a: argparse.Namespace) -> int:
    from ipclab.reproduce import reproduce

    return reproduce(
        profile=a.profile,
        backend=a.backend,
        out=a.out,
        runs_root=a.runs_root,
        figures_dir=a.figures,
        only=a.only,
        studies=a.study,
    )


def cmd_plan(a: argparse.Namespace) -> int:
    from ipclab.decide import main as plan_main

    return plan_main(a.budget, a.root, a.study or (), run=a.make)


def cmd_report(a: argparse.Namespace) -> int:
    from ipclab.report import main as report_main

    return int(
        report_main(["--results", str(a.out / "results"), "--out", str(a.out / "report.pdf")])
    )


def cmd_images(a: argparse.Namespace) -> int:
    from ipclab.backends.docker.images import main as images_main

    return int(images_main(a.args))


def cmd_cluster(a: argparse.Namespace) -> int:
    from ipclab.kubecluster.node import command

    return command(a.action, a.build, a.image, a.keep_on_failure, a.force, a.nodes)


def _add_cluster_parser(sub: Any) -> None:
    p = sub.add_parser(
        "cluster", help="the local single-node Kubernetes cluster (docs/kubernetes.md)"
    )
    p.add_argument(
        "action",
        choices=("up", "down", "status", "build"),
        help="start it (printing each step's time), stop it and undo its host changes, "
        "report it, or only build its binaries",
    )
    p.add_argument(
        "--build",
        action="store_true",
        help="up: build the binaries first when the cache lacks them (the first build "
        "takes about 7 min on 2 cores)",
    )
    p.add_argument(
        "--image", action="append", default=[], metavar="NAME",
        help="up: also import this docker image into the cluster (repeatable)",
    )  # fmt: skip
    p.add_argument(
        "--nodes", type=int, default=1, metavar="N",
        help="up: N nodes (1 to 3): node 1 on the host, each other one in a network "
        "namespace of its own (docs/kubernetes.md, \"Several nodes\")",
    )  # fmt: skip
    p.add_argument(
        "--keep-on-failure", action="store_true",
        help="up: leave a failed start as it is, for inspection (`down` removes it)",
    )  # fmt: skip
    p.add_argument(
        "--force", action="store_true",
        help="down: also remove KUBE-*/CNI-* iptables chains with no other trace of the "
        "cluster (never on a machine that runs another Kubernetes)",
    )  # fmt: skip
    p.set_defaults(func=cmd_cluster)


def _add_run_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="start a stack, run a Locust load, stop it; print the run dir")
    _add_stack_args(p)
    p.add_argument("--users", type=int, default=10)
    p.add_argument("--spawn-rate", type=float, default=10.0)
    p.add_argument("--duration", type=duration, default=30.0, help="e.g. 30s, 3m")
    p.add_argument(
        "--think-time",
        type=non_negative,
        default=0.0,
        metavar="S",
        help="think time per user between requests (closed loop; default none)",
    )
    p.add_argument(
        "--think-time-max",
        type=non_negative,
        metavar="S",
        help="with --think-time: uniform think time in [think-time, this]",
    )
    p.add_argument(
        "--warmup",
        type=duration,
        default=0.0,
        help="leave the first part of the run out of summary.json",
    )
    p.add_argument("--load-seed", type=int, default=1, help="seed of the ids the users ask for")
    p.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="[ACTION:]ROLE@S",
        help="kill (or restart) a component S seconds into the load, repeatable",
    )
    p.add_argument(
        "--out", type=Path, help="the run directory to write (default: a new one under data/runs)"
    )
    p.add_argument("--runs-root", type=Path, help="where new run directories go")
    p.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="Locust master and N workers on this machine; on the kubernetes backend as pods "
        "spread over its nodes (default: one Locust process on this machine)",
    )
    p.add_argument(
        "--pin",
        metavar="STACK:LOAD",
        help="run the stack and the load generator on disjoint CPUs, e.g. 0:1 (local backend)",
    )
    p.set_defaults(func=cmd_run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ipclab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("studies", help="list the registered studies, one per line")
    p.add_argument("-v", "--verbose", action="store_true", help="also title and notebooks")
    p.set_defaults(func=cmd_studies)

    p = sub.add_parser("stacks", help="list the stacks, one per line")
    p.add_argument("-v", "--verbose", action="store_true", help="also describe each stack")
    p.set_defaults(func=cmd_stacks)

    p = sub.add_parser("up", help="start a stack and print its gateway URL")
    _add_stack_args(p)
    p.add_argument("--detach", action="store_true", help="return once up; stop with `down`")
    p.set_defaults(func=cmd_up)

    p = sub.add_parser("down", help="stop a detached stack")
    p.add_argument("stack")
    p.add_argument("--backend", choices=BACKENDS, default="local")
    p.set_defaults(func=cmd_down)

    _add_run_parser(sub)

    p = sub.add_parser("worker", help="a Locust worker for `ipclab run --workers` elsewhere")
    p.add_argument("stack", help="the stack the master's run loads (its users module)")
    p.add_argument("--master", required=True, metavar="HOST:PORT", help="the Locust master")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("reproduce", help="run every notebook and build the report (PDF and site)")
    p.add_argument("--profile", choices=("quick", "full"), default="quick")
    p.add_argument("--backend", choices=BACKENDS, default="local")
    p.add_argument("--out", type=Path, default=Path("out"))
    p.add_argument("--runs-root", type=Path, default=Path("data/runs"))
    p.add_argument("--figures", type=Path, default=Path("figures"))
    p.add_argument("--study", action="append", help="run only this study (see `ipclab studies`)")
    p.add_argument("--only", action="append", help="run only notebooks whose name contains this")
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser(
        "plan", help="the runs that decide the most undecided tests per machine-hour (--make: run)"
    )
    p.add_argument("--budget", default="3h", help="machine time to spend, e.g. 3h or 90m")
    p.add_argument("--root", type=Path, default=Path("data/runs/reference"))
    p.add_argument("--study", action="append", help="plan for this study only")
    p.add_argument("--make", action="store_true", help="make the planned runs (resumable)")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("report", help="build the report (PDF and site) from existing results")
    p.add_argument("--out", type=Path, default=Path("out"))
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("runs", help="list run directories: what they were and what made them")
    p.add_argument("--root", action="append", type=Path, help="folder of runs (default: data/runs)")
    p.add_argument(
        "--where", nargs="*", default=[], metavar="COLUMN=VALUE",
        help="keep the runs whose columns equal these (e.g. stack=shop-grpc users=200)",
    )  # fmt: skip
    p.add_argument("--all", action="store_true", help="every column, not the usual few")
    p.add_argument("--csv", action="store_true", help="CSV instead of a text table")
    p.set_defaults(func=cmd_runs, root=None)

    p = sub.add_parser("compose", help="print a stack's compose file (generated)")
    p.add_argument("stack")
    p.add_argument(
        "--files", metavar="DIR", default=None,
        help="write what the stack's broker or database reads (new passwords, the "
        "database's settings and data) into DIR, a new or empty folder, and print a file "
        "that uses them; without it the file asks for IPCLAB_*_PASSWORD and the files",
    )  # fmt: skip
    p.set_defaults(func=cmd_compose)

    p = sub.add_parser("images", help="build the docker images (see docs/docker.md)")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_images)

    _add_cluster_parser(sub)
    _add_compare_parser(sub)
    return parser


def _sigterm_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def install_signal_handlers() -> None:
    """Ctrl-C and SIGTERM stop the command cleanly, whatever the shell did: a background job
    or ``nohup`` starts us with SIGINT ignored, and Python then installs no handler."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)


def main(argv: Sequence[str] | None = None) -> int:
    install_signal_handlers()
    parser = build_parser()
    a = parser.parse_args(argv)
    try:
        return int(a.func(a))
    except KeyboardInterrupt:
        print("interrupted; everything this command started was stopped", file=sys.stderr)
        return 130
    except (UnknownStack, UnknownStudy, ValueError, FileExistsError) as e:
        print(f"ipclab: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the message matters more than the traceback
        from ipclab.backends.broker import BrokerUnavailable
        from ipclab.backends.local import StackStartError

        if isinstance(e, StackStartError | BrokerUnavailable):
            print(f"ipclab: error: {e}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
