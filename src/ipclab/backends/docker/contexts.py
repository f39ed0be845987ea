"""Build contexts and their hashes: the services image's (the services tree, the lock and its
wheels) and each recipe's; an image is stale when the hash of its context differs from the
one it was built with (its ``LABEL_HASH``)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable
from pathlib import Path

from ipclab.backends.docker.baseimage import BASE_PACKAGES
from ipclab.backends.docker.imagebasics import (
    BUILD_DIR,
    LOCAL_BASE,
    ImageError,
    image_id_of,
)
from ipclab.backends.docker.recipes import GO_SOURCES, NODE_SOURCES, ImageRecipe, RecipeError
from ipclab.backends.docker.wheellock import (
    LOCK,
    check_lock_covers_requirements,
    download_wheels,
    read_lock,
)
from ipclab.paths import REPO_ROOT

# The runtimes' sources (the Go module, the Node.js project) are not part of the Python
# services (their builds go into their own images): the services image's hash leaves them out.
NOT_IN_SERVICES_IMAGE = (GO_SOURCES, NODE_SOURCES)


def _copy_tree(src: Path, dst: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "Dockerfile", LOCK.name)

    def ignored(directory: str, names: list[str]) -> set[str]:
        skip = set(ignore(directory, names))
        skip.update(p.name for p in NOT_IN_SERVICES_IMAGE if p.parent == Path(directory))
        return skip

    shutil.copytree(src, dst, ignore=ignored)


def _tree_hash(paths: Iterable[Path], extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            if any(p in f.parents for p in NOT_IN_SERVICES_IMAGE):
                continue
            # a file of the repository by its path there; of a plugin kept outside it (its
            # recipe's folder), by its path in that folder
            top = REPO_ROOT if f.is_relative_to(REPO_ROOT) else root.parent
            h.update(str(f.relative_to(top)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def services_context_hash(base: str) -> str:
    """The services tree (its Dockerfile and the wheel lock included) and the base *by its
    id*: a base tag moved to another image makes the services image stale."""
    packages = ",".join(BASE_PACKAGES) if base == LOCAL_BASE else ""
    return _tree_hash(
        [REPO_ROOT / "services", LOCK], extra=f"{base}@{image_id_of(base) or ''}\n{packages}"
    )


def recipe_context_hash(recipe: ImageRecipe, base: str) -> str:
    """A recipe's image's (``recipes.ImageRecipe``), built FROM the tag ``base``: its folder's
    files and the base (by id); or, for a context ``prepare`` makes, the base's id, the
    digest of what ``prepare`` adds (``inputs``) and its Dockerfile."""
    if recipe.prepare is None or recipe.inputs is None:
        folder = recipe.dockerfile.parent
        return _tree_hash([folder], extra=f"{base}@{image_id_of(base) or ''}")
    text = f"{image_id_of(base) or ''}\n{recipe.inputs()}\n{recipe.dockerfile.read_text()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def prepare_recipe_context(recipe: ImageRecipe) -> Path:
    """A recipe's build context: its Dockerfile's folder as it is, or a fresh folder with
    the Dockerfile and what ``prepare`` builds on the host."""
    if recipe.prepare is None:
        return recipe.dockerfile.parent
    dest = _fresh_context(BUILD_DIR / recipe.kind, recipe.dockerfile)
    try:
        recipe.prepare(dest)
    except RecipeError as e:
        raise ImageError(f"cannot build {recipe.image}: {e}") from None
    return dest


def _fresh_context(dest: Path, dockerfile: Path) -> Path:
    """An image's build context: the folder ``dest``, emptied, with its ``dockerfile``."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    shutil.copy2(dockerfile, dest / "Dockerfile")
    return dest


def prepare_services_context(dest: Path | None = None) -> Path:
    """Assemble the build context: Dockerfile, the lock, its wheels (checked against it), the
    services package (which imports nothing from the harness)."""
    dest = dest or BUILD_DIR / "services"
    lock = read_lock()
    check_lock_covers_requirements(lock)
    wheels = download_wheels(LOCK, BUILD_DIR / "wheels")
    for sub in ("ipclab_services", "ipclab", "wheels"):  # "ipclab": what older contexts held
        shutil.rmtree(dest / sub, ignore_errors=True)
    (dest / "requirements.txt").unlink(missing_ok=True)  # older contexts' unlocked hashes
    (dest / "wheels").mkdir(parents=True)
    shutil.copy2(REPO_ROOT / "services" / "Dockerfile", dest / "Dockerfile")
    shutil.copy2(LOCK, dest / LOCK.name)
    for wheel in wheels.values():
        shutil.copy2(wheel, dest / "wheels" / wheel.name)
    _copy_tree(REPO_ROOT / "services", dest / "ipclab_services")
    return dest
