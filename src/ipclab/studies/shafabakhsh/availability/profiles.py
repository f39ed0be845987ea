"""Profiles (durations, loads, limits per method), the experiment that runs them, and the
deviations from the thesis."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ipclab.availability.classify import superseded
from ipclab.availability.runner import (
    OUTAGE_REFUSED,
    Common,
    FaultInjection,
    Outage,
    UntilFailure,
    run_fault_injection,
    run_outage,
    run_until_failure,
    with_stack,
)
from ipclab.availability.tracker import LOAD, Criteria
from ipclab.backends import RunningStack, StackOptions
from ipclab.paths import from_repo
from ipclab.runs import DEFAULT_ROOT, Run, read_run
from ipclab.runstore import reusable
from ipclab.stacks import resolve
from ipclab.stats.machine import quiet_run
from ipclab.studies.shafabakhsh.availability.until_failure import little_prediction
from ipclab.studies.shafabakhsh.performance import CLIENT_DEVIATIONS, LANGUAGE_DEVIATION
from ipclab.studies.shafabakhsh.setup import PUBLISHED_ENVIRONMENT
from ipclab.studies.shafabakhsh.stacks import COMPARED

STACKS = tuple(s.name for s in COMPARED)
STYLES = tuple(s.style for s in COMPARED)
METHODS = ("until_failure", "fault_injection", "outage")
#: backends whose orchestrator restarts a killed container by itself (``runner.restarts_itself``)
RESTARTS_ITSELF = ("kubernetes",)
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Profile:
    until_failure: UntilFailure
    until_failure_users: tuple[int, ...]
    until_failure_repetitions: int
    fault_injection: FaultInjection
    outage: Outage
    outage_repetitions: int
    common: Common
    fault_injection_repetitions: int = 1
    # fault injection runs with the clients' reconnect settings tuned (ipclab_services.
    # reconnect), each on the schedule of the default run of the same repetition
    tuned_repetitions: int = 0
    call_timeout_s: float = 15.0  # every style, so that queued AMQP requests can be served late
    cpus: float | None = None  # method 1 resource limits (docker backend only)
    memory_mb: int | None = None
    # one stack per style for its runs (quick) or one per run; a run under resource limits
    # (method 1 with cpus or memory_mb) always has a stack of its own, started with them
    share_stack: bool = False


PROFILES: dict[str, Profile] = {
    # a few minutes for the three styles on the local backend: short cycles, small loads.
    # The outage still outlasts the 4 s silence rule (a queued AMQP page is detected as a
    # failure before the restart) and the load runs 6 s past the restart, long enough for
    # the pages queued in the outage to be answered; the fault injection keeps its 3 cycles
    "quick": Profile(
        until_failure=UntilFailure(cap_s=3.0),
        until_failure_users=(20,),
        until_failure_repetitions=1,
        fault_injection=FaultInjection(
            users=10, cycles=3, mean_gap_s=1.5, min_gap_s=1.0, include_broker=False
        ),
        outage=Outage(users=10, before_s=2.0, outage_s=6.0, after_s=6.0),
        outage_repetitions=1,
        common=Common(
            criteria=Criteria(window_s=2.0, silence_s=4.0), warmup_s=1.0, recover_timeout_s=30.0
        ),
        share_stack=True,
    ),
    # the thesis's loads under limits with a 900 s cap, 3 runs per cell; fault injection 5
    # runs per style of 8 faults each (one MTTR and one A per run) and one run per style
    # with tuned reconnect settings; 5 outage runs per style (docs/availability.md, "The
    # plan")
    "full": Profile(
        until_failure=UntilFailure(cap_s=900.0),
        until_failure_users=(200, 300, 400),
        until_failure_repetitions=3,
        fault_injection=FaultInjection(users=50, cycles=8, mean_gap_s=10.0, min_gap_s=5.0),
        outage=Outage(users=50, before_s=20.0, outage_s=10.0, after_s=25.0),
        outage_repetitions=5,
        common=Common(),
        fault_injection_repetitions=5,
        tuned_repetitions=1,
        cpus=0.5,
        memory_mb=256,
    ),
}

DEVIATIONS = [
    LANGUAGE_DEVIATION,
    "Failure and recovery are explicit criteria observed by a client-side probe (one product "
    "page every 100 ms, 1 s timeout), not an unstated judgement: failure when more than half "
    "of the probe's answers in a window are bad, or no good answer for a while (window and "
    "silence in the run's parameters); recovery at the first complete five-part page after "
    "the restart. In method 1 (the thesis's load-induced failure, unavailability and not "
    "slowness) the failure rules judge the load generator's own users' requests instead "
    "(a failed request: an error answer, a refused or reset connection, the user's timeout; "
    "a slow answer is service), and the probe, its timeout the call timeout + 5 s, only "
    "times the recovery.",
    "MTTR in A runs from the failure onset to the recovery (so that up and down times tile "
    "the timeline); the thesis's MTTR, from the restart to the recovery, is reported beside "
    "it and used for the MTTR claims.",
    "Method 1 (the thesis's): the local backend applies no resource limits, so a local stack "
    "is unlikely to fail under load within the cap; such runs are reported as censored "
    "(MTTF greater than the time on test), never given a number. The docker backend applies "
    "per-container cpus and memory limits (full profile: 0.5 CPU, 256 MB) to the gateway and "
    "the five services, the same in every style; the RabbitMQ broker, shared infrastructure "
    "(in the thesis it ran beside the services on 7 GB nodes), is not limited.",
    "Method 2 (fault injection) adds what the thesis lacks: many failure-recovery cycles, "
    "killed components (a service, the gateway or the broker) on a seeded exponential "
    "schedule, restarted through the backend once the probe detected the failure.",
    "Every style runs with a 15 s gateway call timeout (the performance study uses 2 s), so "
    "AMQP requests queued during an outage can be served late; a synchronous call to a dead "
    "service fails at once whatever the timeout.",
    "Components are restarted by the harness through the backend (a process restart for the "
    "local backend, docker restart for docker) instead of a manual Kubernetes cluster "
    "restart; the load keeps running through the restart. On the kubernetes backend a "
    "killed container (its processes sent SIGKILL, not its pod deleted) is restarted by the "
    "kubelet under the pod's restart policy, with its back-off (10 s, doubling) for a "
    "container restarted within 10 min, and the harness only waits; the pods run under "
    "the same per-container limits (CPU requested 100 m, memory as limited), and the outage "
    "method is not run there.",
    "Client-side duplicates cannot occur (the AMQP gateway drops replies that match no "
    "waiting request); the gateway's count of such unmatched replies is reported instead.",
    *CLIENT_DEVIATIONS,
]

#: each method as the deviations and READMEs name it
METHOD_NAMES = {"until_failure": "method 1", "fault_injection": "fault injection",
                 "outage": "the outage experiment"}  # fmt: skip


def deviations(backend: str, manifests: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """The deviations of a reference on ``backend``: :data:`DEVIATIONS`, and on Kubernetes
    the cluster's (:func:`kubernetes_deviations`, from its runs' ``manifests``)."""
    extra = kubernetes_deviations(manifests) if backend == "kubernetes" else []
    return [*DEVIATIONS, *extra]


def _published(field_name: str) -> str:
    """A field of the thesis's cluster as Table 4.1 prints it."""
    return next(v for f, v, _ in PUBLISHED_ENVIRONMENT if f == field_name)


def _resources_text(resources: Mapping[str, Any], qos: Any) -> str:
    """A container's requests and limits as declared (``{}``: none) and its pod's QoS."""
    said = [
        f"{kind} " + ", ".join(f"{k} {v}" for k, v in sorted((resources.get(kind) or {}).items()))
        for kind in ("requests", "limits")
        if resources.get(kind)
    ]
    return f"{'; '.join(said) or 'no requests or limits'} (QoS {qos or 'not recorded'})"


def pod_resources(manifests: Sequence[Mapping[str, Any]]) -> str:
    """The pods' resources as the runs' manifests record them (``stack_info.kubernetes``),
    per method: each distinct declaration with the containers that had it."""
    by_method: dict[str, dict[str, set[str]]] = {}
    runs: dict[str, int] = {}
    for m in manifests:
        info = (m.get("stack_info") or {}).get("kubernetes") or {}
        method = str(m.get("method") or (m.get("parameters") or {}).get("method"))
        runs[method] = runs.get(method, 0) + 1
        qos = info.get("qos") or {}
        for name, res in (info.get("resources") or {}).items():
            text = _resources_text(res or {}, qos.get(name))
            by_method.setdefault(method, {}).setdefault(text, set()).add(name)
    said = []
    for method in (m for m in (*METHODS[1:], METHODS[0]) if m in by_method):
        groups = by_method[method]
        parts = [
            text if len(groups) == 1 else f"{', '.join(sorted(names))}: {text}"
            for text, names in sorted(groups.items(), key=lambda kv: sorted(kv[1]))
        ]
        every = "every container: " if len(groups) == 1 else ""
        said.append(f"{METHOD_NAMES.get(method, method)} ({runs[method]} runs), {every}"
                    + "; ".join(parts))  # fmt: skip
    return " / ".join(said) if said else "not recorded"


def kubernetes_deviations(manifests: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """The Kubernetes reference's deviations: the cluster (version, nodes, DNS, etcd) and
    the pods' resources as the runs recorded them, the outage method refused, the kubelet's
    back-off kept."""
    infos = [(m.get("stack_info") or {}).get("kubernetes") or {} for m in manifests]
    servers = sorted({str(i["server"]) for i in infos if i.get("server")})
    nodes = sorted({str(n) for i in infos for n in (i.get("nodes") or {}).values() if n})
    own = not infos or any(i.get("ipclab_cluster") for i in infos)
    envs = [m.get("environment") or {} for m in manifests]
    cores = sorted({str(e["cpu_cores_logical"]) for e in envs if e.get("cpu_cores_logical")})
    where = (
        f"{len(nodes)} node{'s' if len(nodes) != 1 else ''} ({', '.join(nodes)})"
        if nodes else "its nodes not recorded"
    )  # fmt: skip
    out = [
        f"Kubernetes {', '.join(servers) or '1.34'} "
        + ("(ipclab's own cluster, built from its module sources: docs/kubernetes.md)"
           if own else "(the cluster of IPCLAB_KUBECONFIG)")
        + f", where the thesis ran Azure Kubernetes Service with Kubernetes "
        f"{_published('Kubernetes Version')} on {_published('Node Count')} "
        f"{_published('Instance Type')} nodes (Table 4.1): here {where}"
        + (f" on one {'/'.join(cores)}-core machine" if own and cores else "")
        + ", the load generator and the probe on the same machine.",
    ]  # fmt: skip
    if own:
        out.append(
            "ipclab's cluster has no cluster DNS (each Service has a fixed ClusterIP and the "
            "pods find the others' names in their /etc/hosts, so a restarted container "
            "resolves its peers without a lookup) and runs etcd without fsync (the cluster "
            "is thrown away after use); AKS runs CoreDNS and an etcd that syncs its writes."
        )
    out += [
        "The pods' resources as the runs' manifests record them: " + pod_resources(manifests)
        + ". Where a CPU limit is set the CPU requested is 100m (six Guaranteed 0.5-CPU pods "
        "do not fit a 2-core node; an equal request weighs the pods equally, as docker's "
        "equal CPU shares do) and the memory requested is the limit.",
        "The outage experiment is not run: " + OUTAGE_REFUSED.format(backend="kubernetes")
        + ". Its claims, and the MTTR claims judged on its restarts, have no runs here.",
        "The kubelet's back-off is kept, not tuned away: a container restarted again within "
        "10 minutes waits 10 s, then 20 s (doubling to 5 min), before the kubelet restarts "
        "it. With 8 faults per run on the gateway, five services (and the broker) a "
        "component is often killed twice in a run, so the back-off is part of the "
        "Kubernetes MTTR (results/recovery_backends: the restart of a component killed "
        "again beside its first).",
    ]  # fmt: skip
    return out


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose {', '.join(PROFILES)}") from None


# --------------------------------------------------------------------------- experiments
@dataclass(frozen=True)
class Job:
    method: str
    stack: str
    users: int
    repetition: int
    reconnect: str = "default"  # the clients' reconnect settings (StackOptions.reconnect)

    @property
    def key(self) -> str:
        tuned = "" if self.reconnect == "default" else f"-{self.reconnect}"
        return f"{self.method}-{self.stack}-u{self.users}-r{self.repetition}{tuned}"


def _judged_by_users(parameters: Mapping[str, Any]) -> bool:
    """Whether a method-1 run's failures were judged by its users' requests (the criterion
    since the probe's 1 s timeout was found to judge slowness; docs/availability.md)."""
    criteria = (parameters.get("common") or {}).get("criteria") or {}
    return criteria.get("failure_source") == LOAD


def current_method_1(parameters: Mapping[str, Any]) -> bool:
    """Whether a method-1 run was made by the current method: its failures judged by the
    users' requests and its users spawned on a recorded ramp (so its time to failure runs
    from the ramp's end). Runs made before (the probe's 1 s timeout, every user at once:
    issue 46) are superseded (``ipclab.availability.classify.superseded``): listed, never
    judged (docs/availability.md, "Method 1")."""
    return not superseded({**parameters, "method": "until_failure"})


#: where a sitting moves the superseded method-1 run at a key it makes again: kept, listed
#: in the report, never judged (docs/availability.md, "Method 1")
SUPERSEDED_FOLDER = "superseded"


def superseded_dirs(directory: Path) -> list[Path]:
    """An experiment folder's superseded method-1 runs, by name: those still at their keys
    and those a later sitting moved aside (:data:`SUPERSEDED_FOLDER`)."""
    found = [*Path(directory).glob("until_failure-*"),
             *(Path(directory) / SUPERSEDED_FOLDER).glob("until_failure-*")]  # fmt: skip
    out = []
    for d in found:
        try:
            r = read_run(d)
        except ValueError:
            continue
        if r.complete and superseded(r.parameters):
            out.append(d)
    return sorted(out, key=lambda d: d.name)


def _limits(options: dict[str, Any]) -> tuple[Any, Any]:
    return options.get("cpus"), options.get("memory_mb")


@dataclass
class AvailabilityRuns:
    until_failure: list[Run] = field(default_factory=list)
    fault_injection: list[Run] = field(default_factory=list)
    outage: list[Run] = field(default_factory=list)
    # fault injection with the clients' reconnect settings tuned: the recovery
    # decomposition's comparison, never in the claims (their runs are the default's)
    tuned: list[Run] = field(default_factory=list)
    # method-1 runs made by an earlier method (``current_method_1``): listed with their
    # spawn and times, never in a summary or a claim
    superseded: list[Run] = field(default_factory=list)

    def all(self) -> list[Run]:
        """The runs of the claims' experiments (every method at the default settings)."""
        return [*self.until_failure, *self.fault_injection, *self.outage]


@dataclass
class AvailabilityExperiment:
    """Every availability run of one profile and backend, under ``root/name``."""

    profile_name: str
    backend: str = "local"
    root: Path = DEFAULT_ROOT
    stacks: tuple[str, ...] = STACKS
    methods: tuple[str, ...] = METHODS  # a subset runs (and loads) only those methods
    order_seed: int = 2020
    # a subset of the profile's runs: only these loads (None: all), only the first
    # ``repetitions`` runs of each cell (None: all); the order and run keys are the full
    # profile's, so a subset's runs are the full profile's and reused by it
    users: tuple[int, ...] | None = None
    repetitions: int | None = None

    @property
    def profile(self) -> Profile:
        return profile(self.profile_name)

    @property
    def name(self) -> str:
        return f"availability-{self.profile_name}-{self.backend}"

    @property
    def directory(self) -> Path:
        return Path(self.root) / self.name

    def jobs(self, stack: str) -> list[Job]:
        """One style's runs of this experiment (its methods, loads and repetitions), in
        :meth:`profile_jobs`' order."""
        return [j for j in self.profile_jobs(stack) if self.selected(j)]

    def selected(self, job: Job) -> bool:
        """Whether ``job`` is one of this experiment's (``methods``, ``users``,
        ``repetitions``)."""
        return (
            job.method in self.methods
            and (self.users is None or job.users in self.users)
            and (self.repetitions is None or job.repetition <= self.repetitions)
        )

    def profile_jobs(self, stack: str) -> list[Job]:
        """One style's runs in the whole profile: outage, fault injection, then until
        failure (which restarts every component, so it goes last on a shared stack)."""
        p = self.profile
        out = [Job("outage", stack, p.outage.users, r) for r in range(1, p.outage_repetitions + 1)]
        fi = p.fault_injection.users
        out += [
            Job("fault_injection", stack, fi, r)
            for r in range(1, p.fault_injection_repetitions + 1)
        ]
        out += [
            Job("fault_injection", stack, fi, r, reconnect="tuned")
            for r in range(1, p.tuned_repetitions + 1)
        ]
        out += [
            Job("until_failure", stack, u, r)
            for r in range(1, p.until_failure_repetitions + 1)
            for u in p.until_failure_users
        ]
        return out

    def options(self, job: Job) -> StackOptions:
        p = self.profile
        limits = job.method == "until_failure"
        return StackOptions(
            call_timeout_s=p.call_timeout_s,
            cpus=p.cpus if limits else None,
            memory_mb=p.memory_mb if limits else None,
            reconnect=None if job.reconnect == "default" else job.reconnect,
        )

    def plan(self, job: Job) -> UntilFailure | FaultInjection | Outage:
        p = self.profile
        if job.method == "until_failure":
            return replace(p.until_failure, users=job.users, seed=job.repetition)
        if job.method == "fault_injection":  # repetition r: the schedule of seed + r - 1
            return replace(p.fault_injection, seed=p.fault_injection.seed + job.repetition - 1)
        return replace(p.outage, seed=job.repetition)

    def _reusable(self, job: Job) -> bool:
        try:
            r = read_run(self.directory / job.key)
        except ValueError:
            return False

        def same(p: Mapping[str, Any]) -> bool:
            # a run on a stack shared with the style's other runs is another measurement
            # than one on a stack of its own (warm, and after the previous run's faults)
            return (
                p.get("plan") == asdict(self.plan(job))
                and _limits(p.get("options") or {}) == _limits(self.options(job).as_dict())
                and ((p.get("options") or {}).get("reconnect") or "default") == job.reconnect
                and bool(p.get("shared_stack")) == self._shared(job)
                and (job.method != "until_failure" or _judged_by_users(p))
            )

        # a run made on a busy machine is made again (the cost per request, the check across
        # a cell's runs, moves with the faults themselves here)
        return quiet_run((r.summary or {}).get("load")) and reusable(
            r.manifest,
            backend=self.backend,
            stack_spec=resolve(job.stack).declaration(),
            same_parameters=same,
        )

    def order(self) -> list[Job]:
        """Every job in the order they run: repetition by repetition, each repetition's
        jobs (every style, method and load) shuffled by ``order_seed``, so that no style
        runs all at one time of the sitting; the same order whatever is done already."""
        rng = random.Random(self.order_seed)
        # the profile's styles, so that a subset of them runs in the full profile's order
        styles = STACKS if set(self.stacks) <= set(STACKS) else self.stacks
        jobs = [j for stack in styles for j in self.profile_jobs(stack)]
        out: list[Job] = []
        for rep in sorted({j.repetition for j in jobs}):
            block = [j for j in jobs if j.repetition == rep]
            rng.shuffle(block)
            out.extend(block)
        return [j for j in out if j.stack in self.stacks and self.selected(j)]

    def todo(self) -> list[Job]:
        """The jobs of :meth:`order` not yet done (a finished run with an equal key, made on
        a quiet machine, is reused)."""
        return [j for j in self.order() if not self._reusable(j)]

    def run(self, progress: Progress = print) -> AvailabilityRuns:
        """Run every job not yet done (finished runs are reused), in :meth:`order`; stacks
        always stopped. A profile with ``share_stack`` runs each style's jobs on one stack."""
        self.directory.mkdir(parents=True, exist_ok=True)
        outer = progress

        def progress(message: str) -> None:  # "[...]" marks progress lines for reproduce
            outer(f"[availability] {message}")

        todo = self.todo()
        for stack in self.stacks:
            if not any(j.stack == stack for j in todo):
                progress(f"{stack}: every run reused")
        for stack in self.stacks:
            shared = [j for j in self.jobs(stack) if j in todo and self._shared(j)]
            if shared:
                with self._stack(stack, self.options(shared[0])) as st:
                    for job in shared:
                        self._run_job(job, st, progress)
        alone = [j for j in todo if not self._shared(j)]
        for i, job in enumerate(alone, 1):
            progress(f"run {i} of {len(alone)} still to make")
            with self._stack(job.stack, self.options(job)) as st:
                self._run_job(job, st, progress)
        return self.load()

    def _shared(self, job: Job) -> bool:
        """Whether ``job`` runs on its style's shared stack: under ``share_stack``, unless its
        options limit the stack's resources (such a run starts a stack of its own with them)."""
        opts = self.options(job)
        return self.profile.share_stack and opts.cpus is None and opts.memory_mb is None

    @contextlib.contextmanager
    def _stack(self, stack: str, options: StackOptions) -> Iterator[RunningStack]:
        logs = self.directory / "logs" / stack
        with with_stack(stack, self.backend, options, logs_dir=logs) as st:
            yield st

    def _clear(self, path: Path) -> None:
        """Clear a job's key before its run: a complete superseded method-1 run there moves
        to :data:`SUPERSEDED_FOLDER` (kept and listed; one moved there before stays), any
        other (unfinished, or of other parameters) is removed and made again."""
        import shutil

        aside = self.directory / SUPERSEDED_FOLDER / path.name
        try:
            old = read_run(path)
        except ValueError:
            old = None
        if old is not None and old.complete and superseded(old.parameters) and not aside.exists():
            aside.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(path, aside)
        else:
            shutil.rmtree(path)

    def _run_job(self, job: Job, stack: RunningStack, progress: Progress) -> None:
        from ipclab.backends.local import wait_ready

        path = self.directory / job.key
        if path.exists():
            self._clear(path)
        wait_ready(stack.gateway_url, 60.0)  # a shared stack is healthy before each run
        progress(f"{job.key}: running")
        extra: dict[str, Any] = {"experiment": self.name, "repetition": job.repetition}
        if self._shared(job):
            extra["shared_stack"] = True
        p, plan, opts = self.profile, self.plan(job), self.options(job)
        if isinstance(plan, UntilFailure):
            limited = opts.cpus is not None or opts.memory_mb is not None
            style = resolve(job.stack).style
            little = little_prediction(style, job.users, self.backend, p.call_timeout_s, limited)
            extra["little"] = little.as_dict()
            progress(f"{job.key}: Little's law: {little.verdict}")
            run_until_failure(stack, path, plan, p.common, opts, progress, extra)
        elif isinstance(plan, FaultInjection):
            run_fault_injection(stack, path, plan, p.common, opts, progress, extra)
        else:
            run_outage(stack, path, plan, p.common, opts, progress, extra)

    def load(self) -> AvailabilityRuns:
        """Every complete run of this experiment, by method; method-1 runs made before the
        current method (at their keys, or moved aside) as ``superseded``."""
        out = AvailabilityRuns()
        for stack in self.stacks:
            for job in self.jobs(stack):
                for path in (self.directory / job.key,
                             self.directory / SUPERSEDED_FOLDER / job.key):  # fmt: skip
                    try:
                        r = read_run(path)
                    except ValueError:
                        continue
                    if not r.complete:
                        continue
                    if job.method == "until_failure" and not current_method_1(r.parameters):
                        out.superseded.append(r)
                    elif path.parent == self.directory:
                        kind = "tuned" if job.reconnect != "default" else job.method
                        getattr(out, kind).append(r)
        return out


def experiments(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    methods: tuple[str, ...] = METHODS,
    *,
    stacks: tuple[str, ...] = STACKS,
    users: tuple[int, ...] | None = None,
    repetitions: int | None = None,
) -> AvailabilityExperiment:
    """Every availability run of a profile; ``methods`` picks a subset of :data:`METHODS`,
    ``stacks`` of :data:`STACKS`, ``users`` of method 1's loads (the other methods have one
    load each: a subset by load selects method 1's runs only) and ``repetitions`` the first
    runs of each cell. A subset's runs are the full profile's (same keys, reused by it)."""
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; choose from {METHODS}")
    p = profile(profile_name)
    bad = sorted(set(stacks) - set(STACKS))
    if bad:
        raise ValueError(f"unknown stacks {bad}; choose from {STACKS}")
    loads = sorted(set(users or ()) - set(p.until_failure_users))
    if loads:
        raise ValueError(
            f"profile {profile_name!r} runs method 1 at {list(p.until_failure_users)} users, "
            f"not {loads}"
        )
    if repetitions is not None and repetitions < 1:
        raise ValueError(f"repetitions must be 1 or more, not {repetitions}")
    if backend in RESTARTS_ITSELF and "outage" in methods:
        raise ValueError(
            f"{OUTAGE_REFUSED.format(backend=backend)} (--method fault_injection "
            "--method until_failure)"
        )
    return AvailabilityExperiment(
        profile_name, backend, from_repo(root), stacks=tuple(stacks), methods=tuple(methods),
        users=None if users is None else tuple(users), repetitions=repetitions,
    )  # fmt: skip


def run_experiments(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    progress: Progress = print,
    methods: tuple[str, ...] = METHODS,
) -> AvailabilityRuns:
    return experiments(profile_name, backend, root, methods).run(progress)
