"""Who started a stack's namespace, and what each harness may remove (the docker backend's
rules, ``ipclab.backends.docker.ownership``, on namespaces).

Every stack runs in a namespace of its own, labelled ``ipclab.owned=1`` and
``ipclab.project=<project>`` (unique per start), and annotated with the harness mark
(``orphans.this_harness()``, or ``detached`` for ``ipclab up --detach``) and the machine
the harness runs on. Deleting the namespace deletes everything of the stack in it (its
Deployments, pods, Services, Secrets and their volumes). From these:

- ``sweep(cluster)``: namespaces whose harness, on this machine, is gone (``kill -9``) are
  deleted, saying so; every start calls it. A namespace of another machine's harness (a
  shared cluster) is never judged here;
- ``down(cluster, stack)``: the detached namespaces of ``stack``, never a living harness's;
- a watchdog beside each stack (``python -m ipclab.backends.kubernetes.ownership watch MARK
  NAMESPACE``, in its own session so the Ctrl-C meant for the harness does not reach it)
  deletes the namespace within seconds of the harness dying and exits once it is gone.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from ipclab import orphans
from ipclab.backends.kubernetes.manifests import (
    HARNESS_ANNOTATION,
    HOST_ANNOTATION,
    OWNED_LABEL,
    PROJECT_LABEL,
)

DETACHED = "detached"
STACK_ANNOTATION = "ipclab.stack"
WATCH_INTERVAL_S = 1.0


def annotations(stack: str, detached: bool) -> dict[str, str]:
    """The namespace's annotations: the harness mark, this machine, the stack's name."""
    return {
        HARNESS_ANNOTATION: DETACHED if detached else orphans.this_harness(),
        HOST_ANNOTATION: socket.gethostname(),
        STACK_ANNOTATION: stack,
    }


def namespaces(core: Any) -> list[Any]:
    """Every namespace ipclab made on this cluster (not being deleted already)."""
    found = core.list_namespace(label_selector=f"{OWNED_LABEL}=1").items
    return [n for n in found if n.status.phase != "Terminating"]


def _orphaned(ns: Any) -> bool:
    a = ns.metadata.annotations or {}
    mark = a.get(HARNESS_ANNOTATION, "")
    if not mark or mark == DETACHED or a.get(HOST_ANNOTATION) != socket.gethostname():
        return False
    return not orphans.harness_alive(mark)


def delete(core: Any, name: str) -> None:
    """Delete namespace ``name`` and everything in it (returns at once; see ``wait_gone``)."""
    from kubernetes.client.rest import ApiException

    try:
        core.delete_namespace(name, propagation_policy="Foreground")
    except ApiException as e:
        if e.status != 404:
            raise


def wait_gone(core: Any, name: str, timeout_s: float = 120.0) -> bool:
    """Wait until namespace ``name`` is gone; False on timeout."""
    from kubernetes.client.rest import ApiException

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            core.read_namespace(name)
        except ApiException as e:
            if e.status == 404:
                return True
            raise
        time.sleep(0.5)
    return False


def sweep(core: Any, say: Callable[[str], None] = print) -> list[str]:
    """Delete the namespaces whose harness (on this machine) is gone, saying so."""
    swept = []
    for ns in namespaces(core):
        if _orphaned(ns):
            delete(core, ns.metadata.name)
            swept.append(ns.metadata.name)
            say(f"removed namespace {ns.metadata.name} left by a harness that is gone")
    return swept


def down(core: Any, stack: str | None = None) -> list[str]:
    """Delete the detached namespaces (of ``stack``), waiting for each to go."""
    gone = []
    for ns in namespaces(core):
        a = ns.metadata.annotations or {}
        if a.get(HARNESS_ANNOTATION) != DETACHED:
            continue
        if stack is not None and a.get(STACK_ANNOTATION) != stack:
            continue
        delete(core, ns.metadata.name)
        wait_gone(core, ns.metadata.name)
        gone.append(str((ns.metadata.labels or {}).get(PROJECT_LABEL, ns.metadata.name)))
    return gone


def start_watchdog(namespace: str) -> subprocess.Popen[bytes]:
    """A process that deletes ``namespace`` once this harness is gone (kill -9 included)."""
    return subprocess.Popen(
        [sys.executable, "-m", __name__, "watch", orphans.this_harness(), namespace],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def watch(mark: str, namespace: str) -> int:
    """Wait until the harness ``mark`` dies, then delete ``namespace``; exit early once the
    namespace is gone (the harness stopped the stack)."""
    from kubernetes.client.rest import ApiException

    from ipclab.backends.kubernetes import cluster

    core = cluster.connect().core
    while True:
        time.sleep(WATCH_INTERVAL_S)
        try:
            ns = core.read_namespace(namespace)
        except ApiException as e:
            if e.status == 404:
                return 0
            continue  # the API hiccuped: look again
        if ns.status.phase == "Terminating":
            return 0
        if not orphans.harness_alive(mark):
            delete(core, namespace)
            return 0


if __name__ == "__main__":  # python -m ipclab.backends.kubernetes.ownership watch MARK NS
    if len(sys.argv) == 4 and sys.argv[1] == "watch":
        raise SystemExit(watch(sys.argv[2], sys.argv[3]))
    print(__doc__)
    raise SystemExit(2)
