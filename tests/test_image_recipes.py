"""Image recipes (``ipclab.backends.docker.recipes``): an image is one declaration, and the
builder (``images.py``) keys, builds and pins every recipe alike. Pure: no engine is asked
(the base's id is stubbed)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ipclab import gobuild, javabuild
from ipclab.backends.docker import contexts, images, recipes
from ipclab.backends.docker.recipes import GO, JAVA, ImageRecipe
from ipclab.paths import REPO_ROOT

BASE_ID = "sha256:" + "b" * 64


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contexts, "image_id_of", lambda name: BASE_ID)


def test_the_recipes_keep_the_context_hashes_the_images_were_built_with(no_engine: None) -> None:
    """Made recipes, the Go, Java, broker and database images keep the hashes their builds
    were recorded with (the formulas before recipes): nothing is rebuilt for the change."""
    go = f"{BASE_ID}\n{gobuild.sources_hash()}\n{(GO.dockerfile).read_text()}"
    assert images.recipe_context_hash(GO, "ipclab-services:latest") == _sha(go)
    java_dir = REPO_ROOT / "services" / "java"
    sources = [javabuild.sources_hash(java_dir / p) for p in ("californium", "payload")]
    java = "\n".join([BASE_ID, *sources, javabuild.LAUNCHER_TEXT, JAVA.dockerfile.read_text()])
    assert images.recipe_context_hash(JAVA, "ipclab-services:latest") == _sha(java)
    for name, folder in (("broker", "broker"), ("database", "postgres")):
        (recipe,) = (
            r for r in images.infrastructure_recipes(("rabbitmq", "postgres")) if r.name == name
        )
        old = contexts._tree_hash([REPO_ROOT / "compose" / folder], extra=f"base@{BASE_ID}")
        assert images.recipe_context_hash(recipe, "base") == old
        assert recipe.kind == folder  # its ipclab.image label, as before


def test_a_new_services_image_is_one_recipe_and_its_runtime_finds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    zig = ImageRecipe(
        "zig", "ipclab-services-zig:latest", "IPCLAB_ZIG_IMAGE",
        REPO_ROOT / "services" / "Dockerfile", base="services", prepare=lambda dest: None,
        inputs=lambda: "sources", runtime="zig", label="services-zig",
    )  # fmt: skip
    monkeypatch.setattr(images, "RUNTIME_RECIPES", (*recipes.RUNTIME_RECIPES, zig))
    assert images.runtime_recipe("zig") is zig
    assert images.runtime_image("zig") == "ipclab-services-zig:latest"
    monkeypatch.setenv("IPCLAB_ZIG_IMAGE", "mine:1")
    assert images.runtime_image("zig") == "mine:1"  # its variable overrides the tag
    assert images.runtime_recipe("python") is None
    with pytest.raises(images.ImageError, match="no image for the cobol runtime; known: python"):
        images.runtime_recipe("cobol")


def test_a_recipe_from_outside_the_tree_is_hashed_by_its_own_files(
    tmp_path: Path, no_engine: None
) -> None:
    folder = tmp_path / "kv"
    folder.mkdir()
    (folder / "Dockerfile").write_text("FROM x\n")
    recipe = ImageRecipe("kv", "kv:latest", "KV_IMAGE", folder / "Dockerfile")
    before = images.recipe_context_hash(recipe, "base")
    assert images.prepare_recipe_context(recipe) == folder  # its folder, as it is
    (folder / "settings.conf").write_text("a = 1\n")
    assert images.recipe_context_hash(recipe, "base") != before


def test_a_recipe_is_checked_when_declared() -> None:
    dockerfile = REPO_ROOT / "services" / "Dockerfile"
    with pytest.raises(ValueError, match="base 'alpine' is not one of"):
        ImageRecipe("x", "x:1", "X", dockerfile, base="alpine")
    with pytest.raises(ValueError, match="prepare and inputs together"):
        ImageRecipe("x", "x:1", "X", dockerfile, prepare=lambda dest: None)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_the_node_image_is_a_runtime_recipe_with_the_hash_it_was_built_with(
    no_engine: None,
) -> None:
    """The Node.js image (issue 50) is one recipe: its key, tag, label, offline build and its
    context hash as before recipes (services id, sources, node's bytes, Dockerfile); and
    ``services/node`` stays out of the services image's hash, as ``services/go`` does."""
    import shutil

    from ipclab import nodebuild
    from ipclab.backends.docker.recipes import NODE

    assert images.runtime_recipe("node") is NODE
    assert (NODE.image, NODE.kind, NODE.network, NODE.base) == (
        "ipclab-services-node:latest", "services-node", "none", "services",
    )  # fmt: skip
    assert NODE.dockerfile.parent == nodebuild.NODE_PROJECT
    assert nodebuild.NODE_PROJECT in contexts.NOT_IN_SERVICES_IMAGE
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on PATH")
    digest = hashlib.sha256(Path(node).resolve().read_bytes()).hexdigest()
    old = f"{BASE_ID}\n{nodebuild.sources_hash()}\n{digest}\n{NODE.dockerfile.read_text()}"
    assert images.recipe_context_hash(NODE, "ipclab-services:latest") == _sha(old)
