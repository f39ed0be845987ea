"""Backends and infrastructure are plugins found by looking (issue 29): each backend module
declares ``BACKEND``, each infrastructure module ``PLUGIN``; ``get_backend``, ``BACKENDS``,
the compose document's infrastructure services and ``ipclab reproduce``'s skip reasons all
follow from them, with no list of names written anywhere else."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from ipclab_services import domains

from ipclab import infrastructure
from ipclab.backends import BACKENDS, all_backends, get_backend
from ipclab.backends.docker.compose import compose_document, write_compose
from ipclab.backends.docker.swarm import stack_document
from ipclab.infrastructure.postgres import VOLUME
from ipclab.reproduce import why_not
from ipclab.stacks import StackSpec, resolve
from ipclab.studies import Notebook


def test_listing_the_backends_imports_neither_the_engine_client_nor_pandas() -> None:
    code = (
        "import sys; from ipclab.backends import BACKENDS; assert len(BACKENDS) == 4; "
        "print(sorted({'docker', 'pandas', 'ipclab.backends.docker.backend', 'kubernetes.client',"
        " 'ipclab.backends.kubernetes.stack'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_backends_are_the_modules_that_declare_one() -> None:
    # the plugins' order: local, the default
    assert BACKENDS == ("local", "docker", "swarm", "kubernetes")
    for name, plugin in all_backends().items():
        assert get_backend(name).name == plugin.name == name
        assert type(plugin.backend()) is type(get_backend(name))
    with pytest.raises(ValueError, match="unknown backend 'nope'; choose one of local"):
        get_backend("nope")


def test_infrastructure_is_one_module_per_plugin() -> None:
    assert infrastructure.names() == ("ferretdb", "mariadb", "postgres", "rabbitmq")
    plugins = infrastructure.all_infrastructure()
    assert {n: p.component for n, p in plugins.items()} == {
        "ferretdb": "docstore",
        "mariadb": "sqlstore",
        "postgres": "database",
        "rabbitmq": "broker",
    }
    with pytest.raises(ValueError, match="unknown infrastructure"):
        StackSpec("x", "shop", "http_json", "rest", ("a",), "u", ("/",), ("a",), ("redis",))


def test_postgres_is_a_compose_service_with_its_own_volume() -> None:
    doc = compose_document(resolve("bundle-rest"))
    db = doc["services"]["database"]
    assert db["extends"]["service"] == "database"
    assert f"{VOLUME}:/var/lib/ipclab-postgres" in db["volumes"]
    assert doc["volumes"][VOLUME]["labels"]["ipclab.project"] == "${IPCLAB_PROJECT:-manual}"
    healthy = {"condition": "service_healthy"}
    assert doc["services"]["person"]["depends_on"] == {"database": healthy}
    gateway = doc["services"]["gateway"]["depends_on"]
    assert gateway["database"] == healthy and gateway["car"] == {"condition": "service_started"}
    assert "IPCLAB_DATABASE_URL" not in doc["services"]["gateway"]["environment"]
    # a stack without infrastructure, and the broker's, as before
    assert doc["services"]["gateway"]["depends_on"] != compose_document(resolve("shop-rest"))
    amqp = compose_document(resolve("shop-amqp"))["services"]
    assert amqp["gateway"]["depends_on"] == {"broker": healthy} and "volumes" not in amqp


def test_the_docker_database_is_loaded_with_the_local_backends_sql(tmp_path: Path) -> None:
    spec = resolve("bundle-rest")
    knobs = {"IPCLAB_SEED": "42", "IPCLAB_BUNDLE_ROWS": "25"}
    write_compose(spec, tmp_path, options=knobs)
    files = tmp_path / "database"
    expected = domains.load(spec.domain).database_sql({**knobs, **spec.settings})
    assert (files / "data.sql").read_text() == expected
    assert "samenet" in (files / "pg_hba.conf").read_text()
    password = (files / "services.pw").read_text().strip()
    assert password not in (files / "provision.sql").read_text()  # its SCRAM verifier only


def test_swarm_refuses_a_database_and_reproduce_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="postgres, which the swarm backend does not run yet"):
        stack_document(resolve("bundle-rest"), {}, 8080)
    for name in ("docker", "swarm"):  # as if an engine answered
        plugin = dataclasses.replace(all_backends()[name], missing=lambda: None)
        monkeypatch.setitem(all_backends(), name, plugin)
    johansson = Notebook("x.ipynb", "x", needs=("postgres",))
    assert why_not(johansson, "docker") is None
    assert "swarm backend does not run yet" in str(why_not(johansson, "swarm"))
    engine_down = dataclasses.replace(all_backends()["docker"], missing=lambda: "no engine")
    monkeypatch.setitem(all_backends(), "docker", engine_down)
    assert why_not(johansson, "docker") == "no engine"


def test_every_plugin_brings_its_image_and_the_docker_backend_hands_it_to_compose() -> None:
    """An infrastructure's image is its plugin's recipe: the builder builds it with no list
    of its own, and its pinned id reaches compose in the recipe's variable, which the
    plugin's compose service names."""
    from ipclab.backends.docker import images
    from ipclab.backends.docker.compose import common_services, image_variables

    everywhere = infrastructure.all_infrastructure().values()
    plugins = [p for p in everywhere if "docker" in p.backends]  # every one (issue 50)
    assert {p.name for p in plugins} == {"ferretdb", "mariadb", "postgres", "rabbitmq"}
    recipes = images.infrastructure_recipes(infrastructure.names())
    expected = {"broker", "database", "docstore", "sqlstore"}
    assert {r.name for r in recipes} == expected == {p.image for p in plugins}
    for plugin in plugins:
        assert plugin.recipe is not None and plugin.recipe.dockerfile.is_file()
        service = plugin.compose_service(plugin.by_hand(), False)
        if "extends" in service:  # the broker's and the database's parts in common.yml
            service = common_services()[service["extends"]["service"]]
        assert f"${{{plugin.recipe.env}:-{plugin.recipe.tag}}}" == service["image"]
    spec = resolve("shop-amqp")
    assert image_variables(spec, {"services": "s", "broker": "sha256:b"}) == {
        "IPCLAB_BROKER_IMAGE": "sha256:b",
        "IPCLAB_POSTGRES_IMAGE": "",
        "IPCLAB_FERRETDB_IMAGE": "",
        "IPCLAB_MARIADB_IMAGE": "",
    }
    stores = spec.infrastructure_with("db")
    assert stores == ("rabbitmq", "ferretdb", "mariadb")
    got = image_variables(spec, {"broker": "b", "docstore": "d", "sqlstore": "q"}, stores)
    assert got == {
        "IPCLAB_BROKER_IMAGE": "b", "IPCLAB_POSTGRES_IMAGE": "",
        "IPCLAB_FERRETDB_IMAGE": "d", "IPCLAB_MARIADB_IMAGE": "q",
    }  # fmt: skip


def test_each_plugin_says_what_the_services_and_the_faults_know_of_it() -> None:
    rabbit, pg = infrastructure.get("rabbitmq"), infrastructure.get("postgres")
    assert rabbit.role_env("amqp://x", gateway=True) == {"IPCLAB_AMQP_URL": "amqp://x"}
    assert pg.role_env("postgresql://y", gateway=True) == {}  # the services' alone
    assert pg.role_env("postgresql://y", gateway=False) == {"IPCLAB_DATABASE_URL": "postgresql://y"}
    assert infrastructure.fault_components(("rabbitmq", "postgres")) == ["broker"]
    assert infrastructure.restarted_as_fault() == {"broker"}


class _Instance:
    """A stand-in for a plugin's local instance (a RabbitMQ node): killed, restarted."""

    def __init__(self) -> None:
        self.process = None
        self.events: list[str] = []

    def kill(self) -> None:
        self.events.append("kill")


def test_a_local_stack_reaches_its_infrastructure_through_the_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ipclab.backends import StackOptions
    from ipclab.backends.local import LocalStack

    stack = LocalStack(resolve("shop-amqp"), StackOptions(), tmp_path, tmp_path / "logs")
    stack.ports = {r: 1000 + i for i, r in enumerate(stack.spec.roles)}
    node = _Instance()
    stack.infra["rabbitmq"] = node
    assert stack.broker is node and stack.database is None
    plugin = infrastructure.get("rabbitmq")
    monkeypatch.setattr(plugin, "restart_local", lambda inst, detached: inst.events.append("up"))
    monkeypatch.setattr(plugin, "local_state", lambda inst: {"epmd_port": 1})
    stack.kill("broker")  # the component's name, as a fault names it
    stack.restart("broker")
    assert node.events == ["kill", "up"]
    state = stack.state()
    assert state["broker"] == {"epmd_port": 1} and state["database"] is None


def test_compose_by_hand_writes_the_infrastructures_files_and_refuses_a_used_folder(
    tmp_path: Path,
) -> None:
    """``ipclab compose STACK --files DIR``: the database's and the broker's files in DIR and
    a document naming them (no ``IPCLAB_*`` placeholder left to set); a folder that holds
    anything is refused, untouched."""
    cli = [sys.executable, "-m", "ipclab.cli", "compose"]
    files = tmp_path / "bundle"
    r = subprocess.run([*cli, "bundle-rest", "--files", str(files)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout.split("\n", 1)[1])
    assert "${IPCLAB_DATABASE" not in r.stdout
    assert f"{files / 'database'}:" in " ".join(doc["services"]["database"]["volumes"])
    password = (files / "database" / "services.pw").read_text().strip()
    assert password in doc["services"]["person"]["environment"]["IPCLAB_DATABASE_URL"]
    assert (files / "database" / "data.sql").stat().st_size > 0
    r = subprocess.run([*cli, "shop-amqp", "--files", str(files)], capture_output=True, text=True)
    assert r.returncode != 0 and "new or empty folder" in r.stderr and not r.stdout
    assert (files / "database" / "services.pw").read_text().strip() == password
    amqp = tmp_path / "amqp"
    r = subprocess.run([*cli, "shop-amqp", "--files", str(amqp)], capture_output=True, text=True)
    assert r.returncode == 0 and "${IPCLAB_BROKER" not in r.stdout, r.stderr
    assert (amqp / "broker-users.conf").exists()
