"""Roles built in another language: the Go runtime builds, and its fixture is deterministic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ipclab_services.domains import shop

from ipclab import gobuild
from ipclab.stacks import GO, PYTHON, all_stacks
from tests.conftest import LEFT_OUT, SHOP_STACKS

BUILT = [n for n, s in all_stacks().items() if s.runtime is GO]  # the shop's, in Go


def test_python_runtime_runs_the_module() -> None:
    cmd = PYTHON.command()
    assert cmd[1:] == ["-m", "ipclab_services.serve"]
    assert PYTHON.unavailable() is None


def test_go_stacks_are_declared() -> None:
    go = {n for n, s in all_stacks().items() if s.runtime is GO}
    assert {"shop-rest-go", "shop-grpc-go", "shop-amqp-go"} <= go


def test_go_toolchain_builds_the_roles() -> None:
    missing = GO.unavailable()
    if missing:
        pytest.skip(f"Go stacks not tested: {missing}")
    binary = gobuild.go_binary()
    assert binary.exists()
    assert gobuild.go_binary() == binary  # cached: same sources, same binary


@pytest.mark.parametrize("stack", BUILT)
def test_a_built_stack_is_tested_or_skipped_by_name(stack: str) -> None:
    """Every Go stack is in the contract and run tests, or skipped here naming the Go
    toolchain and how to install it (the session header says so too)."""
    if stack in LEFT_OUT:
        pytest.skip(f"{stack} not tested (contract, runs, docker): {LEFT_OUT[stack]}")
    assert stack in SHOP_STACKS


def test_without_go_on_path_the_reason_names_the_toolchain_and_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no go anywhere on PATH
    monkeypatch.setattr(gobuild, "USUAL_PLACE", tmp_path / "no-go")
    monkeypatch.setattr(gobuild, "BUILD_DIR", tmp_path / "build")  # no cached binary
    why = GO.unavailable()
    assert why is not None
    assert "Go toolchain" in why and "not on PATH" in why
    assert "https://go.dev/dl/" in why and gobuild.required_version() in why
    with pytest.raises(gobuild.ToolchainMissing, match="go.dev/dl"):
        GO.command()
    # installed where go.dev's archive puts it, but not on PATH: says what to add
    (tmp_path / "no-go").touch()
    assert "add" in (gobuild.toolchain_missing() or "")


def test_a_go_older_than_go_mod_asks_for_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "go"
    fake.write_text("#!/bin/sh\necho go1.19.8\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(gobuild, "BUILD_DIR", tmp_path / "build")
    why = gobuild.toolchain_missing()
    assert why is not None and "Go 1.19.8, older than" in why and "go.dev/dl" in why
    with pytest.raises(gobuild.ToolchainMissing):
        gobuild.go_binary()


def test_fixture_is_deterministic(tmp_path: Path) -> None:
    env = {"IPCLAB_SEED": "7", "IPCLAB_CATALOGUE_SIZE": "50", "IPCLAB_CUSTOMERS": "20"}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    shop.write_fixture(a, env)
    shop.write_fixture(b, env)
    assert a.read_bytes() == b.read_bytes()
    doc = json.loads(a.read_text())
    assert (doc["seed"], len(doc["products"]), len(doc["carts"])) == (7, 50, 20)
    assert doc["products"][6]["product_id"] == 7


def test_compose_runs_go_roles_on_the_go_image() -> None:
    from ipclab.backends.docker.compose import compose_document
    from ipclab.stacks import resolve

    go = compose_document(resolve("shop-amqp-go"))["services"]
    py = compose_document(resolve("shop-amqp"))["services"]
    assert set(go) == set(py)  # the same roles and broker
    for role in resolve("shop-amqp-go").roles:
        assert go[role]["image"] == "${IPCLAB_IMAGE:-ipclab-services-go:latest}"
        assert "image" not in py[role]  # compose/common.yml's default: the Python image
        env_go = {k: v for k, v in go[role]["environment"].items() if k != "IPCLAB_STACK"}
        env_py = {k: v for k, v in py[role]["environment"].items() if k != "IPCLAB_STACK"}
        assert env_go == env_py  # the same knobs, addresses and broker
    assert "image" not in go["broker"]


def test_image_entrypoint_writes_the_fixture_then_execs_the_role(tmp_path: Path) -> None:
    """What each service container of a Go stack runs first (services/fixture.py)."""
    knobs = {"IPCLAB_SEED": "7", "IPCLAB_CATALOGUE_SIZE": "50", "IPCLAB_CUSTOMERS": "20"}
    want = tmp_path / "want.json"
    shop.write_fixture(want, knobs)
    for role, written in (("reviews", True), ("gateway", False)):
        path = tmp_path / role / "fixture.json"
        env = {
            **os.environ,
            **knobs,
            "IPCLAB_DOMAIN": "shop",
            "IPCLAB_ROLE": role,
            "IPCLAB_FIXTURE": str(path),
        }
        cmd = [sys.executable, "-m", "ipclab_services.fixture", "/bin/sh", "-c", "echo $0 ok"]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        assert out.strip() == "/bin/sh ok"  # the command replaced the writer
        assert path.exists() == written
        if written:
            assert path.read_bytes() == want.read_bytes()
