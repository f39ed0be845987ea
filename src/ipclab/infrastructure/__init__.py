"""The infrastructure a stack can declare (a broker, a database), one plugin per module,
found by looking as the studies, fronts and transports are.

A module ``ipclab/infrastructure/<name>.py`` defines ``PLUGIN``, an :class:`Infrastructure`
named ``<name>``: what a stack's ``infrastructure`` and a notebook's ``needs`` say
(``rabbitmq``, ``postgres``). The plugin says on which backends it can be hosted and why this
machine cannot host it on one (``unavailable``, what ``ipclab reproduce`` skips a notebook
for); the local backend starts it as a private process through it, the docker backend asks
it for its compose service, its files and its image. A new kind of infrastructure is one
module here. The names are the modules' (``names()``, read without importing them), so the
declarations (``ipclab.stackspec``) check a stack's names against this registry while the
plugins, which import backend code, sit above them.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class LocalSite:
    """Where a local instance starts: the stack's workdir, the ports chosen for it, the
    environment of the run's knobs (the domain's data depends on them), the stack's domain,
    the ownership mark its processes carry and whether it outlives the harness."""

    workdir: Path
    ports: tuple[int, ...]
    env: dict[str, str]
    domain: str
    mark: dict[str, str]
    detached: bool
    tls: Any = None  # --tls: the stack's files (ipclab.tls.StackTls), else None


class Infrastructure:
    """One kind of infrastructure. Subclasses set ``name`` (its module's name),
    ``component`` (its component in resources.csv and its compose service: ``broker``,
    ``database``) and ``backends`` (where it can be hosted), and override the hooks of the
    backends that host it."""

    name: str = ""
    component: str = ""
    backends: tuple[str, ...] = ()
    image: str = ""  # the docker image its compose service runs (``images.py`` builds it)

    def unavailable(self, backend: str) -> str | None:
        """Why this machine cannot host it on ``backend`` (None when it can). The default:
        a backend not in ``backends`` cannot; the others are checked by the subclass."""
        if backend not in self.backends:
            return f"its stacks need {self.name}, which the {backend} backend does not run yet"
        return None

    # --- local: a private instance, a process of this machine -------------------------
    local_ports: int = 0  # free ports it needs, chosen with the stack's own

    def start_local(self, site: LocalSite) -> Any:
        """Start a private instance for one stack (``site``: where and how); returns it,
        an object with ``process`` (its main process), ``kill()`` and ``stop()``."""
        raise NotImplementedError

    def local_url(self, instance: Any) -> str:
        """The URL the services reach the instance at (e.g. ``IPCLAB_AMQP_URL``)."""
        raise NotImplementedError

    def restart_local(self, instance: Any, detached: bool) -> None:
        """Start a killed instance again, at the same address (a fault's restart)."""
        raise ValueError(f"{self.name} cannot be restarted in place")

    def local_state(self, instance: Any) -> dict[str, Any]:
        """What ``ipclab down`` needs to stop a detached stack's instance (its state file)."""
        raise NotImplementedError

    def local_down(self, state: dict[str, Any], alive: Callable[[Any], bool], ours: bool) -> None:
        """Stop a detached stack's instance from its ``local_state``: a pid is signalled
        only while ``alive(pid)`` (the recorded process); ``ours``: the stack's workdir is
        its own, so what it names may be removed."""
        raise NotImplementedError

    def sweep_local(self) -> list[Path]:
        """Remove what a killed harness left of its instances, saying so; returns it."""
        return []

    # --- docker (compose) and swarm ---------------------------------------------------
    def write_files(self, directory: Path, env: dict[str, str], domain: str) -> Any:
        """Write what its container reads (passwords, settings, data) into ``directory``
        (the stack's 0700 workdir); returns the login ``compose_service`` and ``url`` take."""
        raise NotImplementedError

    def by_hand(self) -> Any:
        """The login of a compose file written for a person (``ipclab compose``): its
        secrets as ``${...}`` placeholders of the caller's environment."""
        raise NotImplementedError

    def url(self, login: Any) -> str:
        """The URL the services reach it at, inside the project network."""
        raise NotImplementedError

    def compose_service(self, login: Any, net_admin: bool) -> dict[str, Any]:
        """Its compose service (``extends`` of ``compose/common.yml``)."""
        raise NotImplementedError

    def add_tls(self, service: dict[str, Any], url: str, tls_dir: Path) -> str:
        """``--tls``: make its compose ``service`` listen over TLS with the stack's files
        (``tls_dir``), in place; returns the URL the services then reach it at. The default:
        it has no TLS listener, and a stack declaring it cannot run with ``--tls``."""
        raise ValueError(f"{self.name} has no TLS listener here: its stacks run without --tls")

    def swarm_configs(self, service: dict[str, Any], login: Any) -> dict[str, Any]:
        """Turn ``service``'s bind-mounted files into swarm configs (in place); returns the
        stack file's ``configs`` entries. The default: nothing to turn."""
        return {}

    def compose_volumes(self) -> dict[str, Any]:
        """The named volumes its service uses (removed with the project: ``down -v``)."""
        return {}

    def service_ports(self) -> tuple[int, ...]:
        """The ports its service listens on in its container: what a Kubernetes Service
        forwards (a compose network forwards every port, so compose needs none)."""
        raise NotImplementedError(f"{self.name}: no service ports declared")


def names() -> tuple[str, ...]:
    """Every infrastructure plugin's name, from the modules' names (nothing imported)."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)))


@functools.cache
def all_infrastructure() -> dict[str, Infrastructure]:
    """Every plugin, by name (each module imported by name, so this package names none)."""
    out: dict[str, Infrastructure] = {}
    for name in names():
        module = importlib.import_module(f"{__name__}.{name}")
        plugin = getattr(module, "PLUGIN", None)
        if not isinstance(plugin, Infrastructure) or plugin.name != name:
            raise TypeError(f"{module.__name__} defines no PLUGIN named {name!r}")
        out[name] = plugin
    return out


def get(name: str) -> Infrastructure:
    plugins = all_infrastructure()
    if name not in plugins:
        raise ValueError(f"unknown infrastructure {name!r}; known: {', '.join(plugins)}")
    return plugins[name]


def of(infrastructure: tuple[str, ...]) -> list[Infrastructure]:
    """The plugins a stack declares (``StackSpec.infrastructure``), in its order."""
    return [get(n) for n in infrastructure]
