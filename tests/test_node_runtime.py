"""The shop in Node.js (issue 50): declared, built by ``npm ci`` from the committed lock only,
reading the same shop.proto, its versions in every run's manifest, its image on docker."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from ipclab_services import limits
from ipclab_services.transports.amqp import PREFETCH
from ipclab_services.transports.rest import POOL_IDLE_S, POOL_PER_HOST

from ipclab import nodebuild
from ipclab.stacks import NODE, all_stacks, resolve
from tests.conftest import LEFT_OUT, SHOP_STACKS

NODE_STACKS = [n for n, s in all_stacks().items() if s.runtime is NODE]
PROJECT = nodebuild.NODE_PROJECT


def test_node_stacks_are_declared_as_the_go_ones() -> None:
    assert NODE_STACKS == ["shop-rest-node", "shop-grpc-node", "shop-amqp-node"]
    for name in NODE_STACKS:
        node, go = resolve(name).declaration(), resolve(name.replace("-node", "-go")).declaration()
        versions = node.pop("versions")
        assert node == {**go, "runtime": "node"}  # the same domain, front, transport, broker
        assert set(versions) >= {"node", "@grpc/grpc-js", "@grpc/proto-loader", "amqplib"}


@pytest.mark.parametrize("stack", NODE_STACKS)
def test_a_node_stack_is_tested_or_skipped_by_name(stack: str) -> None:
    if stack in LEFT_OUT:
        pytest.skip(f"{stack} not tested (contract, runs, docker): {LEFT_OUT[stack]}")
    assert stack in SHOP_STACKS


def test_the_lock_pins_every_package_by_version_and_integrity() -> None:
    """``npm ci`` installs the lock's packages only, each checked against its hash; the
    direct dependencies are exact versions."""
    manifest = json.loads((PROJECT / "package.json").read_text())
    lock = json.loads((PROJECT / "package-lock.json").read_text())
    assert lock["lockfileVersion"] >= 3
    for name, version in manifest["dependencies"].items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), (name, version)
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
    installed = {k: v for k, v in lock["packages"].items() if k}
    assert installed, "the lock installs nothing"
    for where, entry in installed.items():
        assert entry["integrity"].startswith("sha512-"), where  # checked by npm ci
        # npm 11 leaves the registry's URL out (the configured registry serves them)
        assert entry.get("resolved", "https://registry.npmjs.org/").startswith(
            "https://registry.npmjs.org/"
        ), where
    assert nodebuild.locked_packages()["@grpc/grpc-js"] == manifest["dependencies"]["@grpc/grpc-js"]
    assert "ci" in nodebuild.NPM_CI and "install" not in nodebuild.NPM_CI


def test_the_build_hash_covers_sources_lock_and_proto(tmp_path: Path) -> None:
    project = tmp_path / "node"
    (project / "lib").mkdir(parents=True)
    for name in ("main.js", "package.json", "package-lock.json", "lib/x.js"):
        (project / name).write_text(name)
    proto = tmp_path / "shop.proto"
    proto.write_text("syntax = 'proto3';")
    before = nodebuild.sources_hash(project, proto)
    (project / "node_modules").mkdir()
    (project / "node_modules" / "y.js").write_text("not a source")
    (project / "README.md").write_text("not a source")
    assert nodebuild.sources_hash(project, proto) == before
    for changed in (project / "lib" / "x.js", project / "package-lock.json", proto):
        changed.write_text(changed.read_text() + " ")
        assert nodebuild.sources_hash(project, proto) != before
        before = nodebuild.sources_hash(project, proto)


def test_without_node_on_path_the_reason_names_node_and_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(nodebuild, "BUILD_DIR", tmp_path / "build")
    why = NODE.unavailable()
    assert why is not None and "node and npm not on PATH" in why and "Node.js 20" in why
    with pytest.raises(nodebuild.ToolchainMissing, match="nodejs.org"):
        NODE.command()


def test_a_node_older_than_20_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, text in (("node", "echo v18.19.0"), ("npm", "echo 9.2.0")):
        (tmp_path / name).write_text(f"#!/bin/sh\n{text}\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    nodebuild.node_version.cache_clear()
    try:
        why = nodebuild.toolchain_missing()
    finally:
        nodebuild.node_version.cache_clear()
    assert why is not None and "18.19.0, older than 20" in why


def test_the_build_runs_the_same_proto_and_is_cached() -> None:
    if why := NODE.unavailable():
        pytest.skip(f"Node.js stacks not tested: {why}")
    launcher = nodebuild.launcher()
    assert launcher.read_text() == nodebuild.LAUNCHER_TEXT and os.access(launcher, os.X_OK)
    app = launcher.parent / "app"
    assert (app / "proto" / "shop.proto").read_bytes() == nodebuild.PROTO.read_bytes()
    for name in nodebuild.locked_packages():
        assert (app / "node_modules" / name / "package.json").exists(), name
    assert nodebuild.launcher() == launcher  # same sources: the same build


def test_node_limits_and_pools_are_the_python_values() -> None:
    text = (PROJECT / "lib" / "limits.js").read_text()

    def js(name: str) -> int:
        m = re.search(rf"^const {name} = (\d+)(?: << (\d+))?;", text, re.M)
        assert m, f"{name} not found in limits.js"
        return int(m.group(1)) << int(m.group(2) or 0)

    assert js("MAX_BODY") == limits.MAX_BODY and js("MAX_ANSWER") == limits.MAX_ANSWER
    assert js("MAX_HEADER_BYTES") == limits.MAX_HEADER_BYTES
    assert js("HEADER_TIMEOUT_MS") == limits.HEADER_TIMEOUT_S * 1000
    assert js("READ_TIMEOUT_MS") == limits.READ_TIMEOUT_S * 1000
    assert js("IDLE_TIMEOUT_MS") == limits.IDLE_TIMEOUT_S * 1000
    rest = (PROJECT / "lib" / "rest.js").read_text()
    assert f"const POOL_PER_HOST = {POOL_PER_HOST};" in rest
    assert f"const POOL_IDLE_MS = {int(POOL_IDLE_S * 1000)};" in rest
    assert f"const PREFETCH = {PREFETCH};" in (PROJECT / "lib" / "amqp.js").read_text()


def test_compose_runs_node_roles_on_the_node_image() -> None:
    from ipclab.backends.docker.compose import compose_document
    from ipclab.backends.docker.images import runtime_image

    node = compose_document(resolve("shop-amqp-node"))["services"]
    go = compose_document(resolve("shop-amqp-go"))["services"]
    assert set(node) == set(go)
    for role in resolve("shop-amqp-node").roles:
        assert node[role]["image"] == "${IPCLAB_IMAGE:-ipclab-services-node:latest}"
        env_node = {k: v for k, v in node[role]["environment"].items() if k != "IPCLAB_STACK"}
        env_go = {k: v for k, v in go[role]["environment"].items() if k != "IPCLAB_STACK"}
        assert env_node == env_go
    assert runtime_image("node") == "ipclab-services-node:latest"
