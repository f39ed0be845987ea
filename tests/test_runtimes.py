"""Roles built in another language: the Go runtime builds, and its fixture is deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ipclab_services.domains import shop

from ipclab import gobuild
from ipclab.stacks import GO, PYTHON, all_stacks


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


def test_fixture_is_deterministic(tmp_path: Path) -> None:
    env = {"IPCLAB_SEED": "7", "IPCLAB_CATALOGUE_SIZE": "50", "IPCLAB_CUSTOMERS": "20"}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    shop.write_fixture(a, env)
    shop.write_fixture(b, env)
    assert a.read_bytes() == b.read_bytes()
    doc = json.loads(a.read_text())
    assert (doc["seed"], len(doc["products"]), len(doc["carts"])) == (7, 50, 20)
    assert doc["products"][6]["product_id"] == 7
