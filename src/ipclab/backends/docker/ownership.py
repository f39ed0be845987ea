"""Who started a container, and what each harness may remove.

Every container and network of a stack carries two labels: ``ipclab.project=<project>``
(unique per stack start) and ``ipclab.harness=<mark>``, the mark of the harness process that
started it (``orphans.this_harness()``: pid and start time, so a reused pid is another
harness), or ``detached`` for ``ipclab up --detach``. From these:

- ``cleanup_own()`` removes what *this* harness started, nothing else: two test sessions or
  two ``ipclab run`` on one engine never remove each other's stacks;
- ``down(stack)`` removes detached projects (of ``stack``), never one a living harness runs;
- ``sweep_orphans()`` removes projects whose harness is gone (``kill -9``) and says so; every
  start calls it;
- a watchdog started beside each non-detached stack (``python -m
  ipclab.backends.docker.ownership watch MARK PROJECT``, in its own session so the Ctrl-C or
  kill meant for the harness does not reach it) removes the project within seconds of the
  harness dying, its temporary workdir (compose and env files, marked with the harness's
  ``orphans`` mark) too, and exits when the project is gone; a workdir it misses is removed
  by the next start of either backend (``orphans.sweep``).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipclab import orphans

PROJECT_LABEL = "ipclab.project"
HARNESS_LABEL = "ipclab.harness"
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"
STACK_NAMESPACE = "com.docker.stack.namespace"  # what `docker stack deploy` labels
DETACHED = "detached"  # the harness mark of a stack meant to outlive its starter
WATCH_INTERVAL_S = 1.0


def client() -> Any:
    import docker

    return docker.from_env(timeout=60)


def remove_labelled(c: Any, label: str | list[str]) -> dict[str, int]:
    """Remove containers (with their anonymous volumes), networks and volumes with ``label``
    (``key`` or ``key=value``; a list means all of them)."""
    import docker.errors

    counts = {"containers": 0, "networks": 0, "volumes": 0}
    flt = {"label": label}
    # Swarm services first (a swarm would replace their containers as they are removed).
    stacks = set()
    for svc in _services(c, flt):
        stacks.add(((svc.attrs.get("Spec") or {}).get("Labels") or {}).get(STACK_NAMESPACE))
        with contextlib.suppress(docker.errors.NotFound):
            svc.remove()
            counts["services"] = counts.get("services", 0) + 1
    for stack in sorted(s for s in stacks if s):  # their stacks' configs (the broker's users)
        counts["configs"] = counts.get("configs", 0) + _remove_configs(c, stack)
    for ctr in c.containers.list(all=True, filters=flt):
        with contextlib.suppress(docker.errors.NotFound):
            ctr.remove(force=True, v=True)
            counts["containers"] += 1
    for net in c.networks.list(filters=flt):
        with contextlib.suppress(docker.errors.NotFound):
            net.remove()
            counts["networks"] += 1
    for vol in c.volumes.list(filters=flt):
        with contextlib.suppress(docker.errors.NotFound):
            vol.remove(force=True)
            counts["volumes"] += 1
    return counts


def _remove_configs(c: Any, stack: str, wait_s: float = 15.0) -> int:
    """Remove the swarm configs ``docker stack deploy`` made for ``stack`` (labelled with its
    namespace only); a config stays in use until the removed services' tasks are gone."""
    import docker.errors

    removed = 0
    deadline = time.monotonic() + wait_s
    for config in c.configs.list(filters={"label": f"{STACK_NAMESPACE}={stack}"}):
        while True:
            try:
                config.remove()
                removed += 1
                break
            except docker.errors.NotFound:
                break
            except docker.errors.APIError:  # still in use by a task on its way out
                if time.monotonic() > deadline:
                    break
                time.sleep(0.5)
    return removed


def _services(c: Any, filters: dict[str, Any]) -> list[Any]:
    """Swarm services matching ``filters``; none when this engine is in no swarm."""
    import docker.errors

    try:
        return list(c.services.list(filters=filters))
    except docker.errors.APIError:  # "This node is not a swarm manager"
        return []


def projects(c: Any) -> dict[str, str]:
    """Every ipclab project that has a container or a network -> its harness mark ("" for
    projects made before the mark existed, or by hand with compose)."""
    out: dict[str, str] = {}
    flt = {"label": PROJECT_LABEL}
    objs = [*c.containers.list(all=True, filters=flt), *c.networks.list(filters=flt)]
    for obj in [*objs, *_services(c, flt)]:
        attrs = obj.attrs
        labels = (
            attrs.get("Labels")
            or (attrs.get("Config") or {}).get("Labels")
            or (attrs.get("Spec") or {}).get("Labels")
            or {}
        )
        project = labels.get(PROJECT_LABEL, "")
        if project:
            out.setdefault(project, labels.get(HARNESS_LABEL, ""))
    return out


def remove_project(c: Any, project: str) -> dict[str, int]:
    from ipclab.backends.docker import dockerguard

    dockerguard.remove([project])  # the project's filter rules, if the harness may
    counts = remove_labelled(c, f"{PROJECT_LABEL}={project}")
    more = remove_labelled(c, f"{COMPOSE_PROJECT_LABEL}={project}")
    return {k: counts.get(k, 0) + more.get(k, 0) for k in {*counts, *more}}


def _is_orphan(mark: str) -> bool:
    return bool(mark) and mark != DETACHED and not orphans.harness_alive(mark)


def sweep_orphans(say: Callable[[str], None] = print, c: Any = None) -> list[str]:
    """Remove the projects of harnesses that are gone, naming them."""
    c = c or client()
    swept = [p for p, mark in sorted(projects(c).items()) if _is_orphan(mark)]
    for project in swept:
        remove_project(c, project)
    if swept:
        say(f"ipclab: removed docker projects a killed run left behind: {', '.join(swept)}")
    return swept


def cleanup_own(c: Any = None) -> dict[str, int]:
    """Remove every container, network and volume this harness started (and nothing else)."""
    c = c or client()
    return remove_labelled(c, f"{HARNESS_LABEL}={orphans.this_harness()}")


def down(stack: str | None = None, c: Any = None) -> list[str]:
    """Remove the detached projects of ``stack`` (every stack when None), e.g. after ``ipclab
    up --detach``, and sweep orphans; a project a living harness runs is never touched."""
    c = c or client()
    sweep_orphans(c=c)
    prefix = f"ipclab-{stack}-" if stack else "ipclab-"
    removed = [
        p
        for p, mark in sorted(projects(c).items())
        if p.startswith(prefix) and mark in (DETACHED, "")
    ]
    for project in removed:
        remove_project(c, project)
    return removed


def leftovers(
    mark: str | None = None, project: str | None = None, c: Any = None
) -> dict[str, list[str]]:
    """Names of labelled containers, networks and volumes that still exist: of harness
    ``mark`` or of ``project`` only, when given."""
    c = c or client()
    label = PROJECT_LABEL
    if mark:
        label = f"{HARNESS_LABEL}={mark}"
    elif project:
        label = f"{PROJECT_LABEL}={project}"
    flt = {"label": label}
    return {
        "containers": [x.name for x in c.containers.list(all=True, filters=flt)],
        "networks": [x.name for x in c.networks.list(filters=flt)],
        "volumes": [x.name for x in c.volumes.list(filters=flt)],
    }


# --------------------------------------------------------------------------- watchdog


def start_watchdog(project: str) -> subprocess.Popen[bytes]:
    """A process that removes ``project`` once this harness is gone (kill -9 included)."""
    return subprocess.Popen(
        [sys.executable, "-m", __name__, "watch", orphans.this_harness(), project],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def workdirs(project: str) -> list[Path]:
    """The temporary directories (compose file, env file) of ``project``."""
    return sorted(Path(tempfile.gettempdir()).glob(f"{project}-*"))


def remove_workdirs(project: str, mark: str) -> list[Path]:
    """Remove the workdirs of ``project`` that harness ``mark`` made (and no other's)."""
    removed = [d for d in workdirs(project) if orphans.workdir_mark(d) == mark]
    for d in removed:
        shutil.rmtree(d, ignore_errors=True)
    return removed


def watch(mark: str, project: str) -> int:
    """Wait until the harness ``mark`` dies, then remove ``project``; exit early once the
    project is gone (the harness stopped it)."""
    c = client()
    misses = 0
    while True:
        time.sleep(WATCH_INTERVAL_S)
        try:
            if project not in projects(c):
                return 0
            if not orphans.harness_alive(mark):
                removed = remove_project(c, project)
                remove_workdirs(project, mark)
                if removed.get("services"):  # a swarm stack: leave a swarm ipclab made
                    subprocess.run(  # the swarm module's own entry (it imports this one)
                        [sys.executable, "-m", "ipclab.backends.docker.swarm", "leave-if-idle"],
                        stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False,
                    )  # fmt: skip
                return 0
            misses = 0
        except Exception:  # noqa: BLE001 - an engine restart; give up after a minute
            misses += 1
            if misses > 60:
                return 1


def _main(argv: list[str]) -> int:
    import json

    cmd = argv[0] if argv else "leftovers"
    if cmd == "watch":
        return watch(argv[1], argv[2])
    if cmd == "sweep":
        print(json.dumps(sweep_orphans()))
        return 0
    print(json.dumps(leftovers()))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
