"""The infrastructure a stack can declare (a broker, a database), one plugin per module,
found by looking as the studies, fronts and transports are.

A module ``ipclab/infrastructure/<name>.py`` defines ``PLUGIN``, an :class:`Infrastructure`
named ``<name>``: what a stack's ``infrastructure`` and a notebook's ``needs`` say
(``rabbitmq``, ``postgres``). An installed package adds one with no edit here: an entry
point in the group ``ipclab.infrastructure`` named ``<name>`` whose object is the plugin
(``[project.entry-points."ipclab.infrastructure"] name = "pkg.module:PLUGIN"``).

The plugin brings everything the harness needs to know of it: on which backends it can be
hosted and why this machine cannot host it on one (``unavailable``, what ``ipclab
reproduce`` skips a notebook for); the variable through which the services learn its URL
(``url_env``); the local backend's private process; the docker backends' compose service,
the files and login it writes (``write_files``, ``by_hand``) and its image (``recipe``, an
``ImageRecipe`` the image builder builds and pins like any other); and what the
availability experiments need (``faults``: whether faults hit it, ``restart_is_fault``).
The names are the modules' and entry points' (``names()``, read without importing them), so
the declarations (``ipclab.stackspec``) check a stack's names against this registry while
the plugins, which import backend code, sit above them.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENTRY_POINTS = "ipclab.infrastructure"  # the entry-point group of installed plugins


@dataclass(frozen=True)
class FilesLogin:
    """A stack's login to a container that reads the files the harness writes from a bind
    mount (a database, a store): the services' password, the folder of those files, and the
    services' URL with ``{password}`` where the password goes."""

    password: str
    files: str
    url_pattern: str

    @property
    def url(self) -> str:
        return self.url_pattern.replace("{password}", self.password)


def by_hand_login(component: str, url_pattern: str) -> FilesLogin:
    """The :class:`FilesLogin` of a compose file written for a person (``ipclab compose``):
    the password and the folder as ``${...}`` placeholders of the caller's environment,
    ``IPCLAB_<COMPONENT>_PASSWORD`` and ``IPCLAB_<COMPONENT>_FILES``."""
    var = f"IPCLAB_{component.upper()}"
    return FilesLogin(
        f"${{{var}_PASSWORD:?set {var}_PASSWORD}}",
        f"${{{var}_FILES:?set {var}_FILES to the {component}'s files}}",
        url_pattern,
    )


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
    # the image its compose service runs, an ``ImageRecipe`` (ipclab.backends.docker.recipes,
    # not imported here: a local run's code is not the docker backend's): built, pinned and
    # checked by ``images.py``, its pinned id handed to compose in ``recipe.env``; None: it
    # brings none (an image from elsewhere, or no container)
    recipe: Any = None
    # the variable that gives the services its URL (``IPCLAB_AMQP_URL``), and whether the
    # gateway gets it too (the broker carries the gateway's calls; the database is the
    # services' alone)
    url_env: str = ""
    gateway_reaches: bool = True
    # the gateway's calls to the services go through it (a broker): what a measured network
    # delay's round trips from the gateway go to (its first ``service_ports``)
    carries_calls: bool = False
    # availability (``ipclab.availability``, ``ipclab.soak``): whether faults hit it as
    # they hit a service (its component is a target), and whether its restart, a stop and
    # a start, is itself a fault of the system (the broker's queues are lost) rather than
    # the recovery from a kill
    faults: bool = False
    restart_is_fault: bool = False

    @property
    def image(self) -> str:
        """The key of its image in a stack's images (``recipe.name``), "" without one."""
        return self.recipe.name if self.recipe is not None else ""

    def role_env(self, url: str, gateway: bool) -> dict[str, str]:
        """What a role's environment gets of it: its URL in ``url_env`` (not the gateway's
        unless ``gateway_reaches``)."""
        if not url or not self.url_env or (gateway and not self.gateway_reaches):
            return {}
        return {self.url_env: url}

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

    def local_versions(self, instance: Any) -> dict[str, str]:
        """What a run's manifest records of the instance's software (``stack_info``'s
        ``infrastructure``: e.g. FerretDB's version and module sum); nothing by default."""
        return {}

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


class MountedStore(Infrastructure):
    """A store of the services' data (``--store db``) that, on docker, is a whole compose
    service of its own image (``recipe``) on ``port``, reading the files the harness writes
    (:class:`FilesLogin`) from a read-only bind mount at ``FILES_TARGET`` (each store's
    ``compose_service``); its hop stays
    plain under ``--tls``, as on the local backend (the stores are the services' data, not
    a hop of the studies' IPC). A subclass says how its URL is made (``url_pattern``)."""

    FILES_TARGET = "/run/ipclab"
    port = 0

    def url_pattern(self) -> str:
        """The services' URL in the project network, ``{password}`` for the password."""
        raise NotImplementedError

    def by_hand(self) -> FilesLogin:
        return by_hand_login(self.component, self.url_pattern())

    def url(self, login: FilesLogin) -> str:
        return login.url

    def add_tls(self, service: dict[str, Any], url: str, tls_dir: Path) -> str:
        return url

    def service_ports(self) -> tuple[int, ...]:
        return (self.port,)


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """The installed packages' plugins (group ``ipclab.infrastructure``), by name."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)}


def names() -> tuple[str, ...]:
    """Every infrastructure plugin's name, from the modules' and the entry points' names
    (nothing imported)."""
    found = {m.name for m in pkgutil.iter_modules(__path__)} | set(_entry_points())
    return tuple(sorted(found))


@functools.cache
def all_infrastructure() -> dict[str, Infrastructure]:
    """Every plugin, by name: this package's modules (each imported by name, so this package
    names none) and the installed packages' entry points; a name given twice is refused."""
    out: dict[str, Infrastructure] = {}
    built_in = {m.name for m in pkgutil.iter_modules(__path__)}
    installed = _entry_points()
    if twice := built_in & set(installed):
        raise ValueError(f"infrastructure declared twice (a module and an entry point): {twice}")
    for name in sorted(built_in):
        module = importlib.import_module(f"{__name__}.{name}")
        out[name] = _checked(getattr(module, "PLUGIN", None), name, module.__name__)
    for name, ep in sorted(installed.items()):
        out[name] = _checked(ep.load(), name, ep.value)
    return dict(sorted(out.items()))


def _checked(plugin: Any, name: str, where: str) -> Infrastructure:
    if not isinstance(plugin, Infrastructure) or plugin.name != name:
        raise TypeError(f"{where} defines no PLUGIN named {name!r}")
    return plugin


def get(name: str) -> Infrastructure:
    plugins = all_infrastructure()
    if name not in plugins:
        raise ValueError(f"unknown infrastructure {name!r}; known: {', '.join(plugins)}")
    return plugins[name]


def of(infrastructure: tuple[str, ...]) -> list[Infrastructure]:
    """The plugins a stack declares (``StackSpec.infrastructure``), in its order."""
    return [get(n) for n in infrastructure]


def role_env(
    infrastructure: tuple[str, ...], urls: dict[str, str], gateway: bool
) -> dict[str, str]:
    """What a role's environment gets of a stack's infrastructure (``urls``: name -> the
    URL it is reached at), each plugin's ``role_env``."""
    out: dict[str, str] = {}
    for plugin in of(infrastructure):
        out.update(plugin.role_env(urls.get(plugin.name, ""), gateway))
    return out


def fault_components(infrastructure: tuple[str, ...]) -> list[str]:
    """The components of a stack's infrastructure that faults hit (``faults``)."""
    return [p.component for p in of(infrastructure) if p.faults]


def restarted_as_fault() -> frozenset[str]:
    """The components of every plugin whose restart is itself a fault (``restart_is_fault``:
    the broker), whichever stack: what a run's recorded faults are read with."""
    return frozenset(p.component for p in all_infrastructure().values() if p.restart_is_fault)


def of_component(infrastructure: tuple[str, ...], component: str) -> Infrastructure | None:
    """The plugin of a stack's infrastructure whose component is ``component``, if any."""
    return next((p for p in of(infrastructure) if p.component == component), None)
