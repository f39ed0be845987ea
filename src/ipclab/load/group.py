"""Several stacks under one load: a run that compares them request by request.

A group run starts every stack of a group (each with its own services and infrastructure),
then one Locust process whose user module sends each request to one of them, in the order
it chooses (for instance two APIs interleaved in a random order, one client). A shared
machine's drifts then hit every stack alike, and the comparison is made within one run.

The user module finds the stacks' addresses in ``IPCLAB_TARGETS`` (``name=url,...``, the
group's order) and any knobs of the group in the environment (:class:`GroupLoad`). It
sends a fixed schedule of requests and then ends Locust itself: the run is ``complete``
when exactly :attr:`GroupLoad.requests` requests were recorded, else ``failed``. A load
with no schedule (``requests`` None) is a closed loop for the profile's duration instead,
``complete`` when Locust ran it to the end. Records
go to the usual run directory (docs/run-directory.md); each request's ``name`` says which
stack it went to, and resources.csv names components ``<stack>/<component>``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipclab.backends import RunningStack, StackOptions, get_backend
from ipclab.backends.described import describe_stack
from ipclab.load import forkserver
from ipclab.load.runner import EARLY_TOLERANCE_S, LoadProfile, LoadSession, run_parameters
from ipclab.runs import RunWriter, compact_requests
from ipclab.stacks import StackSpec, resolve

OVERRUN_S = 60.0  # past the profile's duration a schedule that has not ended is cut


@dataclass(frozen=True)
class GroupLoad:
    """The load of a group run: the Locust user module that spreads requests over the
    stacks, the environment it reads, and how many requests its schedule sends in all
    (None: no schedule, a closed loop for the profile's duration)."""

    users: str
    requests: int | None
    env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.requests is not None and self.requests < 1:
            raise ValueError("a group load sends at least one request")
        bad = [k for k in self.env if not k.startswith("IPCLAB_")]
        if bad:
            raise ValueError(f"group load variables must start with IPCLAB_: {bad}")

    def as_dict(self) -> dict[str, Any]:
        return {"users": self.users, "requests": self.requests, "env": dict(self.env)}


class StackGroup(RunningStack):
    """Running stacks seen as one by a :class:`LoadSession`: its Locust user module is the
    group's, its samples are every stack's (``<stack>/<component>``)."""

    def __init__(self, stacks: Mapping[str, RunningStack], load: GroupLoad, backend: str):
        if not stacks:
            raise ValueError("a group needs at least one stack")
        if any(getattr(s, "tls", None) is not None for s in stacks.values()):
            raise ValueError("a group of stacks with --tls: its load generator would trust one")
        self.stacks = dict(stacks)
        self.load = load
        self.backend = backend
        first = next(iter(self.stacks.values())).spec
        self.spec: StackSpec = dataclasses.replace(
            first, name="+".join(self.stacks), users=load.users
        )

    @property
    def gateway_url(self) -> str:
        return next(iter(self.stacks.values())).gateway_url

    def targets(self) -> dict[str, str]:
        return {name: s.gateway_url for name, s in self.stacks.items()}

    def load_env(self) -> dict[str, str]:
        """What the load generator's environment gets besides the usual knobs."""
        targets = ",".join(f"{n}={u}" for n, u in self.targets().items())
        return {**self.load.env, "IPCLAB_TARGETS": targets}

    def sample(self) -> list[dict[str, Any]]:
        rows = []
        for name, stack in self.stacks.items():
            for r in stack.sample():
                rows.append({**r, "component": f"{name}/{r['component']}"})
        return rows

    def _split(self, role: str) -> tuple[RunningStack, str]:
        name, sep, component = role.partition("/")
        if not sep or name not in self.stacks:
            raise ValueError(f"{role!r}: name a component as <stack>/<role> of {self.spec.name}")
        return self.stacks[name], component

    def kill(self, role: str) -> None:
        stack, component = self._split(role)
        stack.kill(component)

    def restart(self, role: str) -> None:
        stack, component = self._split(role)
        stack.restart(component)

    def logs(self) -> dict[str, str]:
        return {f"{n}/{k}": v for n, s in self.stacks.items() for k, v in s.logs().items()}

    def stop(self) -> None:
        for stack in self.stacks.values():
            stack.stop()


def run_group(
    stacks: Sequence[str],
    load: GroupLoad,
    profile: LoadProfile,
    *,
    out: Path,
    backend: str = "local",
    options: StackOptions | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Start every stack of ``stacks``, put ``load`` on them (``profile.duration_s`` bounds
    its time), stop them; return the run directory ``out`` (new or empty)."""
    specs = [resolve(s) for s in stacks]
    if len({s.name for s in specs}) != len(specs):
        raise ValueError(f"a stack is named twice in the group {list(stacks)}")
    options = options or StackOptions()
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not an empty directory")
    out.mkdir(parents=True, exist_ok=True)
    writer = _group_writer(specs, load, profile, out, backend, options, extra)
    started: dict[str, RunningStack] = {}
    status = "failed"
    with writer.guard():
        try:
            _start_stacks(specs, backend, options, out, writer, started)
            group = StackGroup(started, load, backend)
            summary, ran = _put_load(group, profile, writer, options)
            # summary.json leaves out the profile's warm-up; the schedule counts every request
            recorded = compact_requests(out)
            status = _judge(load, profile, ran, recorded, writer)
            summary["status"] = status
            summary["schedule"] = {"recorded": recorded, "wanted": load.requests}
            writer.write_json("summary.json", summary)
        finally:
            _stop_stacks(list(started.values()))
            writer.event("stack_down")
    writer.finish(status)
    return out


def _group_writer(
    specs: Sequence[StackSpec],
    load: GroupLoad,
    profile: LoadProfile,
    out: Path,
    backend: str,
    options: StackOptions,
    extra: dict[str, Any] | None,
) -> RunWriter:
    """The run's writer, its manifest naming the group (every stack, their declarations and
    the group's load) as one stack ``a+b``."""
    name = "+".join(s.name for s in specs)
    parameters = {
        **run_parameters(name, profile, options),
        "faults": [],
        "group": {"stacks": [s.name for s in specs], **load.as_dict()},
        **(extra or {}),
    }
    return RunWriter(
        out,
        "load",
        parameters,
        stack=name,
        style="+".join(s.style for s in specs),
        stack_spec={s.name: s.declaration() for s in specs},
        backend=backend,
        users=profile.users,
    )


def _start_stacks(
    specs: Sequence[StackSpec],
    backend: str,
    options: StackOptions,
    out: Path,
    writer: RunWriter,
    started: dict[str, RunningStack],
) -> None:
    """Start the stacks one by one into ``started`` (so that the caller stops those that
    started if a later one fails), then record what each reports of itself."""
    forkserver.warm()  # Locust's imports overlap the stacks' start
    for spec in specs:
        writer.event("stack_starting", stack=spec.name)
        started[spec.name] = get_backend(backend).start(
            spec, options, logs_dir=out / "logs" / spec.name
        )
        writer.event("stack_up", stack=spec.name, gateway_url=started[spec.name].gateway_url)
    described = {name: describe_stack(s) for name, s in started.items()}
    for key in ("stack_info", "healthz"):  # each keyed by stack, as stack_spec
        per_stack = {name: d[key] for name, d in described.items() if key in d}
        if per_stack:
            writer.update_manifest(**{key: per_stack})


def _stop_stacks(stacks: list[RunningStack]) -> None:
    """Stop the stacks together (each waits on its processes' exits), whatever happens."""

    def stop(stack: RunningStack) -> None:
        with contextlib.suppress(Exception):
            stack.stop()

    if len(stacks) < 2:
        for stack in stacks:
            stop(stack)
        return
    with ThreadPoolExecutor(max_workers=len(stacks)) as pool:
        list(pool.map(stop, stacks))


def _put_load(
    group: StackGroup, profile: LoadProfile, writer: RunWriter, options: StackOptions
) -> tuple[dict[str, Any], float]:
    """Run the group's load until its schedule ends (cut ``OVERRUN_S`` past the profile's
    duration); the session's summary and how long the load ran."""
    session = LoadSession(group, profile, writer, options)  # type: ignore[arg-type]
    try:
        session.start()
        session.wait(profile.duration_s + OVERRUN_S)
        ran = session.elapsed
        if session.running:
            writer.event("load_overrun", note="the schedule did not end in time; cut")
    finally:
        summary = session.stop()
    return summary, ran


def _judge(
    load: GroupLoad, profile: LoadProfile, ran: float, recorded: int, writer: RunWriter
) -> str:
    """``complete`` when a schedule recorded exactly its requests, or a closed loop lasted
    its duration; else ``failed``, with an event saying why."""
    if load.requests is None:  # a closed loop: it must have lasted its duration
        status = "complete" if ran >= profile.duration_s - EARLY_TOLERANCE_S else "failed"
        if status != "complete":
            writer.event("load_ended_early", after_s=round(ran, 3))
    else:
        status = "complete" if recorded == load.requests else "failed"
        if status != "complete":
            writer.event("schedule_incomplete", recorded=recorded, wanted=load.requests)
    return status


__all__ = ["GroupLoad", "StackGroup", "run_group"]
