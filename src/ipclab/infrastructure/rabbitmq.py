"""RabbitMQ, the broker of the amqp stacks: a private node on the local backend
(``ipclab.backends.broker``), the ``broker`` service of the stack's compose project on
docker and swarm (``compose/common.yml``, the image ``ipclab-broker``, with the stack's only
AMQP user in a file the harness writes: ``compose.BrokerLogin``)."""

from __future__ import annotations

import urllib.parse
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


TLS_CONF_TARGET = "/etc/rabbitmq/conf.d/95-ipclab-tls.conf"
AMQP_PORT = 5672
AMQPS_PORT = 5671  # the broker container's TLS listener with --tls


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

    local_ports = 4  # AMQP, Erlang distribution, a private epmd, AMQPS (used with --tls)

    def start_local(self, site: LocalSite) -> RabbitNode:
        from ipclab.backends.broker import RabbitNode

        amqp, dist, epmd, amqps = site.ports
        node = RabbitNode(
            site.workdir / "broker", port=amqp, dist_port=dist, epmd_port=epmd,
            extra_env=site.mark, tls_port=amqps if site.tls is not None else 0, tls=site.tls,
        )  # fmt: skip
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

    def add_tls(self, service: dict[str, Any], url: str, tls_dir: Path) -> str:
        """``--tls``: the broker's compose service also listens for AMQPS on 5671 with the
        stack's certificate (TLS 1.3 only, no client certificate: the stack's login
        authenticates), from a conf.d file beside the TLS folder, and its healthcheck waits
        for that listener too; the services get the ``amqps://`` URL (the plain listener
        answers no role)."""
        from ipclab.tls import CONTAINER_DIR, StackTls

        files = StackTls(CONTAINER_DIR)
        conf = tls_dir.parent / "broker-tls.conf"
        conf.write_text(
            f"listeners.ssl.default = {AMQPS_PORT}\n"
            f"ssl_options.cacertfile = {files.ca}\n"
            f"ssl_options.certfile = {files.cert}\n"
            f"ssl_options.keyfile = {files.key}\n"
            "ssl_options.versions.1 = tlsv1.3\n"
            "ssl_options.verify = verify_none\n"
            "ssl_options.fail_if_no_peer_cert = false\n"
        )
        conf.chmod(0o644)
        service["volumes"] = [
            *service.get("volumes", []),
            f"{tls_dir}:{CONTAINER_DIR}:ro",
            f"{conf}:{TLS_CONF_TARGET}:ro",
        ]
        probe = f"exec 3<>/dev/tcp/127.0.0.1/{AMQP_PORT} && exec 4<>/dev/tcp/127.0.0.1/{AMQPS_PORT}"
        health = dict(common_services()[self.component].get("healthcheck", {}))
        service["healthcheck"] = {**health, "test": ["CMD", "bash", "-c", probe]}
        parts = urllib.parse.urlsplit(url)
        host = parts.netloc.rsplit(":", 1)[0] if parts.port else parts.netloc
        netloc = f"{host}:{AMQPS_PORT}"
        return urllib.parse.urlunsplit(("amqps", netloc, parts.path, parts.query, parts.fragment))

    def service_ports(self) -> tuple[int, ...]:
        return (AMQP_PORT, AMQPS_PORT)  # AMQPS answers with --tls only

    def swarm_configs(self, service: dict[str, Any], login: BrokerLogin) -> dict[str, Any]:
        """The users file as a swarm config, which reaches the broker on any node."""
        service.pop("volumes", None)
        service["configs"] = [
            {"source": BROKER_USERS_CONFIG, "target": BROKER_USERS_TARGET, "mode": 0o444}
        ]
        return {BROKER_USERS_CONFIG: {"file": login.users_file}}


PLUGIN = RabbitMQ()
