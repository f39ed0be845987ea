"""RabbitMQ, the broker of the amqp stacks: a private node on the local backend
(``ipclab.backends.broker``), the ``broker`` service of the stack's compose project on
docker and swarm (``compose/common.yml``, the image ``ipclab-broker``, with the stack's only
AMQP user in a file the harness writes: ``compose.BrokerLogin``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipclab.backends.docker.compose import (
    BROKER_USERS_CONFIG,
    BROKER_USERS_TARGET,
    BY_HAND_LOGIN,
    DELAY_CAPABILITIES,
    BrokerLogin,
    common_services,
    extends,
    write_broker_login,
)
from ipclab.infrastructure import Infrastructure, LocalSite

if TYPE_CHECKING:
    from ipclab.backends.broker import RabbitNode


class RabbitMQ(Infrastructure):
    name = "rabbitmq"
    component = "broker"
    backends = ("local", "docker", "swarm")
    image = "broker"

    def unavailable(self, backend: str) -> str | None:
        if backend != "local":  # the broker image is built at the stack's start
            return super().unavailable(backend)
        from ipclab.backends.broker import BrokerUnavailable, find_server

        try:
            find_server()
        except BrokerUnavailable as e:
            return str(e)
        return None

    local_ports = 3  # AMQP, Erlang distribution, a private epmd

    def start_local(self, site: LocalSite) -> RabbitNode:
        from ipclab.backends.broker import RabbitNode

        amqp, dist, epmd = site.ports
        node = RabbitNode(
            site.workdir / "broker", port=amqp, dist_port=dist, epmd_port=epmd, extra_env=site.mark
        )
        node.start(detached=site.detached)
        return node

    def local_url(self, instance: RabbitNode) -> str:
        return instance.url

    def restart_local(self, instance: RabbitNode, detached: bool) -> None:
        if instance.process is not None and instance.process.poll() is None:
            instance.stop()  # a restart of a running node: never leave the old one
        instance.start(detached=detached)

    def local_state(self, instance: RabbitNode) -> dict[str, Any]:
        return {
            "pid": instance.process.pid if instance.process else None,
            "epmd_port": instance.epmd_port,
            "dir": str(instance.directory),
        }

    def local_down(self, state: dict[str, Any], alive: Callable[[Any], bool], ours: bool) -> None:
        from ipclab.backends.broker import stop_private_epmd
        from ipclab.procs import stop_group

        if alive(state.get("pid")):
            stop_group(state["pid"], grace=10)
        if ours and isinstance(state.get("epmd_port"), int):
            stop_private_epmd(state["epmd_port"])

    def write_files(self, directory: Path, env: dict[str, str], domain: str) -> BrokerLogin:
        return write_broker_login(directory)

    def by_hand(self) -> BrokerLogin:
        return BY_HAND_LOGIN

    def url(self, login: BrokerLogin) -> str:
        return login.url

    def compose_service(self, login: BrokerLogin, net_admin: bool) -> dict[str, Any]:
        # A bind mount: Compose v1.29 ignores `configs` (the swarm's stack file turns this
        # mount into a config, which reaches the broker on whichever node it runs).
        svc: dict[str, Any] = {
            **extends(self.component),
            "volumes": [f"{login.users_file}:{BROKER_USERS_TARGET}:ro"],
        }
        if net_admin:  # a local cap_add replaces the shared one: keep common.yml's too
            shared = common_services()[self.component].get("cap_add", [])
            svc["cap_add"] = [*shared, *DELAY_CAPABILITIES]
        return svc

    def swarm_configs(self, service: dict[str, Any], login: BrokerLogin) -> dict[str, Any]:
        """The users file as a swarm config, which reaches the broker on any node."""
        service.pop("volumes", None)
        service["configs"] = [
            {"source": BROKER_USERS_CONFIG, "target": BROKER_USERS_TARGET, "mode": 0o444}
        ]
        return {BROKER_USERS_CONFIG: {"file": login.users_file}}


PLUGIN = RabbitMQ()
