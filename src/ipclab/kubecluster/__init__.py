"""A single-node Kubernetes cluster on this machine, assembled from package and module
sources only, started and stopped by one command (docs/kubernetes.md, issue 33).

The control plane and the kubelet are one binary built from Kubernetes 1.34's Go modules
with etcd 3.6 embedded (``build``); the container runtime is Debian's containerd 1.6 run as
a private instance, with Debian's CNI plugins; images are imported, never pulled (``images``).
Everything it writes lives under one private root (``layout``); what it must change on the
host outside that root is recorded and undone (``host``, ``teardown``).

- ``layout``: the root, the paths under it, the addresses and ports, :func:`kubeconfig`;
- ``access``: every read of the root's files by the harness, checked at each open;
- ``build``: the node and pause binaries, cached by a hash of their sources;
- ``pki``, ``config``, ``components``: certificates, configuration files, command lines;
- ``images``: the pause image written as an archive, docker images imported;
- ``readiness``: when each part counts as started; ``state``: the state file, ownership;
- ``node``: ``up``, ``status``, the orphan sweep; ``teardown``: ``down``; ``host``: the
  host changes outside the root; ``sysctls``: the kernel settings and their record;
  ``firewall``: the iptables rules, the guard, what ``down`` removes.

:func:`sweep` (:func:`ipclab.kubecluster.node.sweep_stale`) is one of
``orphans.BUILTIN_SWEEPERS``: every ``orphans.sweep`` runs it, so that a start or stop a
killed harness left half done is removed by the next run's sweep, whatever its backend.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ipclab.kubecluster.layout import ROOT, Layout, kubeconfig, why_no_cluster

__all__ = ["ROOT", "Layout", "kubeconfig", "sweep", "why_no_cluster"]


def sweep(say: Callable[[str], None]) -> list[str]:
    """The orphan sweep's part for the local cluster (``orphans.BUILTIN_SWEEPERS``)."""
    from ipclab.kubecluster import layout

    if not os.path.lexists(layout.ROOT):
        return []  # the common case: nothing to look at, nothing more imported
    from ipclab.kubecluster.node import sweep_stale

    try:
        return sweep_stale(say, layout.ROOT)
    except (OSError, RuntimeError, ValueError) as e:  # the other sweeps and the run go on
        say(f"ipclab: could not sweep the local Kubernetes cluster's leftovers: {e}")
        return []
