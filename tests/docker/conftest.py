"""Docker-backend tests: real dockerd, real compose, the images built from a local base.

Every test here is marked ``docker`` and skipped, with the reason, when no Docker engine
answers (start one with ``scripts/docker-engine.sh``). Stacks are module-scoped so that no
container outlives its module. The session ends by checking that nothing this session started
is left (a leftover fails the session, named), then removes it whatever happened; stacks of
other harnesses on the same engine are never touched. Under pytest-xdist (`make test`) each
worker checks its own: the harness mark is the worker process's (``orphans.this_harness``),
and every test here runs on one worker, in the "serial" group (tests/conftest.py).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipclab import orphans
from ipclab.backends import StackOptions
from ipclab.backends.docker.backend import DockerBackend, DockerStack, cleanup_all, engine_status
from ipclab.backends.docker.ownership import leftovers
from ipclab.stacks import all_stacks, resolve
from tests.conftest import started_together

HERE = Path(__file__).resolve().parent
# Every stack of the shop domain, from the registry: a new one is tested with no edit here.
# Stacks whose runtime cannot be built here (no Go toolchain) are left out; the session
# header and tests/test_runtimes.py name them and the missing toolchain.
SHOP_STACKS = tuple(
    name
    for name, s in all_stacks().items()
    if s.domain == "shop" and s.runtime.image and s.runtime.unavailable() is None
)
RUNTIMES = sorted({resolve(name).runtime.name for name in SHOP_STACKS})


def family(name: str) -> str:
    """A stack's family: its declaration (``StackSpec.declaration``) without its settings,
    the fixed environment its roles read in-process (shop-rest-seq's gateway calls one by
    one: ``IPCLAB_SEQUENTIAL``). Stacks of one family run the same images, roles,
    transports and infrastructure, so the docker backend builds the same containers and
    networks for them; what their settings change, the local suite tests for every stack."""
    declared = dict(resolve(name).declaration())
    declared.pop("settings")
    return repr(sorted(declared.items()))


# One shop stack per family (the first in registry order): the local tests the docker
# modules re-collect run on these, so a stack that only sets its roles' environment costs
# no docker start here, and one that brings a new image, transport or front is among them.
_FIRST: dict[str, str] = {}
for _name in SHOP_STACKS:
    _FIRST.setdefault(family(_name), _name)
SHOP_FAMILIES = tuple(_FIRST.values())

_ENGINE: list[str | None] = []


def engine_reason() -> str | None:
    if not _ENGINE:
        _ENGINE.append(engine_status())
    return _ENGINE[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.docker)
            item.add_marker(pytest.mark.slow)
            reason = engine_reason()
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=f"docker: {reason}"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _ENGINE and _ENGINE[0] is None:
        try:
            left = leftovers(mark=orphans.this_harness())
            if any(left.values()):
                print(f"\ndocker: the tests left behind {left}", file=sys.stderr)
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            cleanup_all()
        except Exception as e:  # noqa: BLE001 - report, never mask the tests' own result
            print(f"docker cleanup_all failed: {e}", file=sys.stderr)


@pytest.fixture(scope="session")
def docker_images() -> dict[str, str]:
    """The services, Go, Node.js and broker images, built (from the local base where no
    registry answers) if missing or stale."""
    from ipclab.backends.docker import images
    from ipclab.infrastructure.rabbitmq import IMAGE as BROKER

    t0 = time.monotonic()
    out = images.ensure_images(base="auto", infrastructure=[BROKER])
    for runtime in RUNTIMES:  # the Go and Node.js roles' images, on the services image
        if runtime != "python":
            out[runtime] = images.ensure_images(base="auto", runtime=runtime)["services"]
    print(f"images ready in {time.monotonic() - t0:.1f}s: {out}", file=sys.stderr)
    return out


@pytest.fixture(scope="module")
def shop_stacks(docker_images: dict[str, str]) -> Iterator[dict[str, DockerStack]]:
    """The product-page stacks on docker, one per family, for one module (overrides the
    local one)."""
    yield from started_together(DockerBackend(), SHOP_FAMILIES, StackOptions(call_timeout_s=1.0))
