"""What a removal of a labelled project takes with it, read with a stand-in engine (no
docker needed): a swarm stack's configs go with its services."""

from __future__ import annotations

from typing import Any

import docker.errors

from ipclab.backends.docker import ownership


class _Thing:
    def __init__(self, name: str, labels: dict[str, str], busy: int = 0) -> None:
        self.name, self.attrs, self.busy, self.removed = (
            name,
            {"Spec": {"Labels": labels}},
            busy,
            False,
        )

    def remove(self, **_: Any) -> None:
        if self.busy:  # still in use by a task on its way out
            self.busy -= 1
            raise docker.errors.APIError("config is in use")
        self.removed = True


class _Listing:
    def __init__(self, things: list[_Thing]) -> None:
        self.things = things

    def list(self, filters: dict[str, str], **_: Any) -> list[_Thing]:
        key, _, value = filters["label"].partition("=")
        return [t for t in self.things if t.attrs["Spec"]["Labels"].get(key) == value]


def test_removing_a_swarm_project_removes_its_stacks_configs_once_they_are_free() -> None:
    ns = ownership.STACK_NAMESPACE
    service = _Thing("p_gateway", {ownership.PROJECT_LABEL: "p", ns: "p"})
    users = _Thing("p_broker_users", {ns: "p"}, busy=2)  # labelled by the stack only
    other = _Thing("q_broker_users", {ns: "q"})

    class Engine:
        services = _Listing([service])
        configs = _Listing([users, other])
        containers = networks = volumes = _Listing([])

    counts = ownership.remove_labelled(Engine(), f"{ownership.PROJECT_LABEL}=p")
    assert service.removed and users.removed and not other.removed
    assert counts["services"] == 1 and counts["configs"] == 1
