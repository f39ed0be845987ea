"""Kubernetes-backend tests: a real cluster (ipclab's own: ``ipclab cluster up``, or the one
``IPCLAB_KUBECONFIG`` names), real pods, the docker backend's images.

Every test here is marked ``kubernetes`` (and ``slow``) and skipped, with the reason, when no
cluster answers. Stacks are module-scoped, one namespace each. The session ends by checking
that no namespace this session's harness made is left (a leftover fails the session, named),
then deletes them whatever happened; other harnesses' namespaces are never touched. Under
pytest-xdist each worker checks its own (the harness mark is the worker process's); every
test here is in the "serial" group (tests/conftest.py).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipclab import orphans
from ipclab.backends import StackOptions
from ipclab.backends.kubernetes.manifests import HARNESS_ANNOTATION
from ipclab.stacks import resolve
from tests.conftest import started_together

HERE = Path(__file__).resolve().parent
# the three compared Python styles and one Go stack (issue 33's contract on the cluster)
SHOP_STACKS = ("shop-rest", "shop-grpc", "shop-amqp", "shop-grpc-go")
_REASON: list[str | None] = []


def cluster_reason() -> str | None:
    if not _REASON:
        from ipclab.backends.kubernetes import cluster

        _REASON.append(cluster.unavailable())
    return _REASON[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.kubernetes)
            item.add_marker(pytest.mark.slow)
            if (reason := cluster_reason()) is not None:
                item.add_marker(pytest.mark.skip(reason=f"kubernetes: {reason}"))


def own_namespaces() -> list[str]:
    """The namespaces this harness made that still exist (not being deleted)."""
    from ipclab.backends.kubernetes import cluster, ownership

    mark = orphans.this_harness()
    return [
        ns.metadata.name
        for ns in ownership.namespaces(cluster.connect().core)
        if (ns.metadata.annotations or {}).get(HARNESS_ANNOTATION) == mark
    ]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _REASON and _REASON[0] is None:
        from ipclab.backends.kubernetes import cluster, ownership

        try:
            if left := own_namespaces():
                print(f"\nkubernetes: the tests left behind {left}", file=sys.stderr)
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            for name in left:
                ownership.delete(cluster.connect().core, name)
        except Exception as e:  # noqa: BLE001 - report, never mask the tests' own result
            print(f"kubernetes cleanup failed: {e}", file=sys.stderr)


@pytest.fixture(scope="module")
def shop_stacks() -> Iterator[dict[str, object]]:
    """The product-page stacks on the cluster, for one module (overrides the local one)."""
    from ipclab.backends.kubernetes.stack import KubernetesBackend

    names = tuple(n for n in SHOP_STACKS if resolve(n).runtime.unavailable() is None)
    yield from started_together(KubernetesBackend(), names, StackOptions(call_timeout_s=1.0))
