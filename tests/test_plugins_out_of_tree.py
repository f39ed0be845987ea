"""Plugins that need no edit in ipclab (issue 49, must-show 3): a package kept outside the
source tree brings a backend, an infrastructure and a study with a stack on them, is made
discoverable as an installed package is (a ``*.dist-info`` folder on the path whose
``entry_points.txt`` names them), and every command finds them: ``ipclab stacks``, the
``--backend`` choices, the options a backend honours, ``ipclab compose`` (the plugin's
service, login and URL), the image builder (the plugin's recipe), ``ipclab up`` and
``ipclab down`` (the backend plugin's own ``down``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

PACKAGE = Path(__file__).parent / "plugin_package" / "fakeplug"
ENTRY_POINTS = """\
[ipclab.backends]
fake = fakeplug.backend:BACKEND

[ipclab.infrastructure]
fakekv = fakeplug.kv:PLUGIN

[ipclab.studies]
fakestudy = fakeplug:STUDY
"""


@pytest.fixture
def installed(tmp_path: Path) -> dict[str, str]:
    """The package copied to a folder outside the tree with its dist-info, as pip would
    leave it in site-packages; returns the environment that has that folder on the path."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "fakeplug")
    info = site / "fakeplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    state = tmp_path / "state"
    state.mkdir()
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path, "FAKEPLUG_STATE": str(state)}


def ipclab(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "ipclab.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def python(env: dict[str, str], code: str) -> str:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_the_source_tree_names_none_of_the_plugins() -> None:
    src = Path(__file__).parents[1] / "src" / "ipclab"
    for f in src.rglob("*.py"):
        text = f.read_text()
        assert "fakeplug" not in text and "fakekv" not in text, f


def test_an_installed_package_s_plugins_join_every_listing(installed: dict[str, str]) -> None:
    stacks = ipclab(installed, "stacks")
    assert stacks.returncode == 0 and "fake-shop" in stacks.stdout.split(), stacks.stderr
    found = json.loads(
        python(
            installed,
            "import json; from ipclab.backends import BACKENDS; from ipclab import infrastructure;"
            " from ipclab.studies import all_studies; "
            "print(json.dumps([BACKENDS, infrastructure.names(), sorted(all_studies())]))",
        )
    )
    assert found[0] == ["local", "docker", "swarm", "kubernetes", "fake"]  # by their order
    assert found[1] == ["fakekv", "ferretdb", "mariadb", "postgres", "rabbitmq"]
    assert "fakestudy" in found[2]
    # the options it does not honour are refused, naming the backends that do
    r = ipclab(installed, "up", "fake-shop", "--backend", "fake", "--cpus", "1")
    assert r.returncode != 0 and "--cpus: docker, swarm and kubernetes" in r.stderr, r.stderr
    assert "(not the fake backend)" in r.stderr and "Traceback" not in r.stderr


def test_the_plugin_brings_its_compose_service_login_and_image(
    installed: dict[str, str], tmp_path: Path
) -> None:
    files = tmp_path / "files"
    r = ipclab(installed, "compose", "fake-shop", "--files", str(files))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout.split("\n", 1)[1])
    token = (files / "kv-token").read_text().strip()
    kv = doc["services"]["kv"]
    assert kv["image"] == "${FAKEPLUG_KV_IMAGE:-fakeplug-kv:latest}"
    assert f"{files / 'kv-token'}:/run/kv-token:ro" in kv["volumes"]
    env = {role: doc["services"][role]["environment"] for role in ("cart", "gateway")}
    assert env["cart"]["FAKEPLUG_KV_URL"] == f"http://kv:8000/?token={token}"
    assert "FAKEPLUG_KV_URL" not in env["gateway"]  # gateway_reaches = False
    assert doc["services"]["cart"]["depends_on"] == {"kv": {"condition": "service_healthy"}}
    recipes = python(
        installed,
        "from ipclab.backends.docker import images, compose; from ipclab.stacks import resolve; "
        "r = images.infrastructure_recipes(('fakekv',))[0]; "
        "print(r.name, r.image, r.kind, r.dockerfile.is_file(), "
        "compose.image_variables(resolve('fake-shop'), {'kv': 'sha256:k'})['FAKEPLUG_KV_IMAGE'])",
    )
    assert recipes == "kv fakeplug-kv:latest fakeplug True sha256:k"
    faults = python(
        installed,
        "from ipclab.soak import fault_targets; from ipclab.stacks import resolve; "
        "print(fault_targets(resolve('fake-shop'))[-1])",
    )
    assert faults == "kv"  # the plugin says faults hit it


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.slow
def test_a_stack_runs_on_the_fake_backend_and_ipclab_down_uses_its_down(
    installed: dict[str, str],
) -> None:
    state = Path(installed["FAKEPLUG_STATE"])
    r = ipclab(installed, "up", "fake-shop", "--backend", "fake", "--detach")
    assert r.returncode == 0, r.stderr
    try:
        url = r.stdout.splitlines()[0]
        assert "ipclab down fake-shop --backend fake" in r.stdout
        with urllib.request.urlopen(f"{url}/product/5?customer_id=2", timeout=10) as resp:
            assert set(json.loads(resp.read())) == {
                "product", "reviews", "recommendations", "shipping", "cart",
            }  # fmt: skip
        pids = json.loads((state / "fake-shop.json").read_text())["pids"]
        assert len(pids) == 7 and all(_alive(p) for p in pids)  # 6 roles and the store
        environ = {psutil.Process(p).environ().get("IPCLAB_ROLE"): psutil.Process(p).environ()
                   for p in pids[:6]}  # fmt: skip
        kv_url = environ["cart"]["FAKEPLUG_KV_URL"]
        with urllib.request.urlopen(kv_url, timeout=5) as resp:  # the plugin's instance
            assert resp.status == 200
        assert "FAKEPLUG_KV_URL" not in environ["gateway"]
    finally:
        d = ipclab(installed, "down", "fake-shop", "--backend", "fake", timeout=60)
    assert d.returncode == 0 and "fake-shop stopped" in d.stdout, d.stderr
    assert (state / "down.log").read_text() == "fake-shop up\n"  # the plugin's down() ran
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)
    again = ipclab(installed, "down", "fake-shop", "--backend", "fake")
    assert again.returncode == 0 and "fake-shop was not up" in again.stdout
    assert (state / "down.log").read_text().splitlines()[-1] == "fake-shop not up"
