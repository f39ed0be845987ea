"""ipclab.javabuild: the Java roles built by Maven into a cache keyed by their sources, once,
then reused; a clear message naming what to install when Java or Maven are missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ipclab import javabuild


def test_a_missing_toolchain_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    why = javabuild.toolchain_missing()
    assert why is not None and "java and mvn not on PATH" in why
    assert "apt-get install openjdk-17-jdk-headless maven" in why
    monkeypatch.setattr(javabuild, "BUILD_DIR", Path("/nonexistent-ipclab-build"))
    with pytest.raises(javabuild.ToolchainMissing, match="mvn not on PATH"):
        javabuild.classpath()


def test_the_hash_follows_the_sources_only(tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(javabuild.JAVA_PROJECTS / "californium", project,
                    ignore=shutil.ignore_patterns("target"))  # fmt: skip
    before = javabuild.sources_hash(project)
    (project / "README.txt").write_text("not a source")
    assert javabuild.sources_hash(project) == before
    adapter = next(project.rglob("Adapter.java"))
    adapter.write_text(adapter.read_text() + "\n// changed\n")
    assert javabuild.sources_hash(project) != before


@pytest.mark.skipif(
    javabuild.toolchain_missing() is not None, reason=str(javabuild.toolchain_missing())
)
def test_the_californium_adapters_build_once_then_come_from_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lib = javabuild.classpath()
    jars = {p.name for p in lib.glob("*.jar")}
    assert "ipclab-californium.jar" in jars
    assert any(j.startswith("californium-core-3.11.0") for j in jars), jars

    def no_maven(*args: object, **kwargs: object) -> None:
        raise AssertionError("Maven ran for sources already built")

    monkeypatch.setattr(javabuild, "_maven", no_maven)
    assert javabuild.classpath() == lib
