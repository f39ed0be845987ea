"""RabbitMQ, the broker of the amqp stacks: a private node on the local backend
(``ipclab.backends.broker``), the ``broker`` service of the stack's compose project on
docker and swarm (``compose/common.yml``, the image ``ipclab-broker``, with the stack's only
AMQP user in a file the harness writes: ``compose.BrokerLogin``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ipclab.backends.docker.compose import (
    BROKER_USERS_TARGET,
    BY_HAND_LOGIN,
    DELAY_CAPABILITIES,
    BrokerLogin,
    common_services,
    extends,
    write_broker_login,
)
from ipclab.infrastructure import Infrastructure


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


PLUGIN = RabbitMQ()
