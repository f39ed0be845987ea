"""Container images for the docker backend: a local base, the services image and the images
the recipes declare (``recipes.py``: the runtimes' and each infrastructure plugin's).

    python -m ipclab.backends.docker.images base  # Debian bookworm via debootstrap + docker import
    python -m ipclab.backends.docker.images build  # services + infrastructure (--go: + Go's)
    python -m ipclab.backends.docker.images status  # what exists; does it match the tree
    python -m ipclab.backends.docker.images lock  # rewrite services/requirements.lock (uv)

One image (``ipclab-services``) serves every role of every Python stack; the role comes
from the environment at run time. The Go stacks' roles run ``ipclab-services-go``: the
services image plus the static Go binary built on the host (``services/go/Dockerfile``); the
Node.js stacks' roles run ``ipclab-services-node``: the services image plus the host's node and
its ``npm ci`` build (``services/node/Dockerfile``).

The services image's Python dependencies are the committed lock's wheels
(``wheellock``: every file by version and sha256, resolved by uv from the versions the host
runs, so local and docker backends use the same libraries), downloaded *on
the host*, checked against the lock there and installed offline in the image with
``--require-hashes``, so the build never depends on the container's network or certificates.
Every other image is a recipe (``recipes.ImageRecipe``), built, pinned and checked alike
here: the runtimes' (``recipes.RUNTIME_RECIPES``) and each infrastructure plugin's
(``Infrastructure.recipe``): the broker image is the official RabbitMQ image, or Debian's
rabbitmq-server on the local base where no registry answers (``compose/broker/``); the
database image (``ipclab-postgres``) is Debian's postgresql package on the Python base
(``compose/postgres/``). This module names none of them.

Supply chain (issue 28 item 8, docs/docker.md): every image is built FROM its base's id;
each records its Debian packages (``APT_RECORD``); each build is pinned by image id in
``MANIFEST`` with what made it, and stacks run those ids (``pinned``), never a tag.

This module builds and holds the CLI; the jobs it builds on are modules of their own:
``baseimage`` (the debootstrap base), ``wheellock`` (requirements and the lock),
``contexts`` (build contexts and their hashes), ``pins`` (the manifest of built images) and
``imagebasics`` (what they share).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipclab import buildlock
from ipclab.backends.docker.baseimage import (
    BASE_PACKAGES,
    DEBIAN_MIRROR,
    build_base_image,
    local_base_current,
)
from ipclab.backends.docker.contexts import (
    prepare_recipe_context,
    prepare_services_context,
    recipe_context_hash,
    services_context_hash,
)
from ipclab.backends.docker.imagebasics import (
    BUILD_DIR,
    LABEL_HASH,
    LOCAL_BASE,
    OFFICIAL_PYTHON,
    OFFICIAL_RABBITMQ,
    SERVICES_IMAGE,
    ImageError,
    docker_client,
    image_exists,
    image_id_of,
    image_size_mb,
    log,
)
from ipclab.backends.docker.pins import (
    apt_packages,
    dpkg_list,
    pin_build,
    pinned,
    read_manifest,
    record_image,
    stale,
)
from ipclab.backends.docker.recipes import GO, JAVA, RUNTIME_RECIPES, ImageRecipe
from ipclab.backends.docker.wheellock import LOCK, lock_drift, read_lock, sha256_file, write_lock
from ipclab.paths import REPO_ROOT

GO_IMAGE = GO.image
# the native CoAP adapters' (Californium) containers: the services image, a JRE, the jars
JAVA_IMAGE = JAVA.image


@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
    """One builder at a time on this machine (concurrent harnesses share the wheel cache, the
    tags and the manifest): ``build/docker``'s build lock (:func:`ipclab.buildlock.held`:
    threads and processes alike; re-entrant within a thread)."""
    BUILD_DIR.mkdir(parents=True, exist_ok=True)  # the builds below write into it
    with buildlock.held(BUILD_DIR):
        yield


# --------------------------------------------------------------------------- build


@dataclass
class Bases:
    python: str
    rabbitmq: str


def resolve_bases(base: str = "auto") -> Bases:
    """``official``: python:3.11-slim / rabbitmq:3 (pulled if missing); ``local``: the
    debootstrapped base (built if missing); ``auto``: official when present or pullable, else
    local; any other value: that image for both (``name@sha256:...`` pins a registry image)."""
    if base == "official":
        for img in (OFFICIAL_PYTHON, OFFICIAL_RABBITMQ):
            if not image_exists(img):
                _pull(img)
        return Bases(OFFICIAL_PYTHON, OFFICIAL_RABBITMQ)
    if base == "local":
        _ensure_local_base()
        return Bases(LOCAL_BASE, LOCAL_BASE)
    if base == "auto":
        if image_exists(LOCAL_BASE):
            _ensure_local_base()
            return Bases(LOCAL_BASE, LOCAL_BASE)
        try:
            return resolve_bases("official")
        except ImageError as e:
            log(f"no official images ({e}); building the local base")
            return resolve_bases("local")
    return Bases(base, base)


def _ensure_local_base() -> None:
    """The local base with today's ``BASE_PACKAGES``, and the one the harness recorded: a
    base tag moved to another image is rebuilt from the Debian archive. A base made before
    builds were recorded is recorded as found (``adopted``): nothing else can vouch for it,
    and its packages are read back from it."""
    if not local_base_current():
        if image_exists(LOCAL_BASE):
            log(f"{LOCAL_BASE} lacks some of {', '.join(BASE_PACKAGES)}: rebuilding it")
        build_base_image()
        return
    entry = read_manifest().get(LOCAL_BASE)
    if entry is None:
        image_id = image_id_of(LOCAL_BASE) or ""
        log(f"{LOCAL_BASE} ({image_id[:19]}) was built before builds were recorded: adopting it")
        packages = apt_packages(image_id) or dpkg_list(image_id)
        record_image(LOCAL_BASE, {"id": image_id, "adopted": True, "apt_packages": packages})
        return
    try:
        pinned(LOCAL_BASE)
    except ImageError as e:
        log(f"{e}: rebuilding it")
        build_base_image()


def _pull(image: str) -> None:
    import docker.errors

    repo, _, tag = image.partition(":")
    try:
        docker_client().images.pull(repo, tag=tag or "latest")
    except docker.errors.APIError as e:
        raise ImageError(f"cannot pull {image}: {e.explanation or e}") from None


def _build(
    path: Path,
    tag: str,
    base: str,
    labels: dict[str, str],
    dockerfile: str,
    network_mode: str | None = None,
) -> str:
    """Build ``tag`` FROM ``base`` (an id); returns the new image's id."""
    import docker.errors

    client = docker_client()
    old_id = image_id_of(tag)
    t0 = time.monotonic()
    log(f"building {tag} from {base}")
    tail: list[str] = []
    for chunk in client.api.build(
        path=str(path),
        dockerfile=dockerfile,
        tag=tag,
        buildargs={"BASE_IMAGE": base},
        labels=labels,
        rm=True,
        forcerm=True,
        decode=True,
        pull=False,
        network_mode=network_mode,
    ):
        if "stream" in chunk:
            line = chunk["stream"].rstrip()
            if line:
                tail = (tail + [line])[-40:]
                if os.environ.get("IPCLAB_VERBOSE"):
                    log(line)
        if "error" in chunk:
            raise ImageError(f"building {tag} failed: {chunk['error']}\n" + "\n".join(tail))
    new_id = str(client.images.get(tag).id)
    log(f"{tag}: {new_id[:19]}, {image_size_mb(tag)} MB in {time.monotonic() - t0:.0f} s")
    if old_id and old_id != new_id:
        # The image this tag named before is now untagged; drop it (not if a container uses it).
        with contextlib.suppress(docker.errors.APIError):
            client.images.remove(old_id, noprune=False)
    return new_id


def _base_id(base: str) -> str:
    image_id = image_id_of(base)
    if image_id is None:
        raise ImageError(f"no base image {base}")
    return image_id


def build_services_image(
    base: str, tag: str = SERVICES_IMAGE, network_mode: str | None = "auto"
) -> str:
    """``network_mode="auto"``: no network at all on the local base (it has every system
    package; Python packages come from the host's wheels), the default network otherwise
    (the official python image lacks tc and iptables, installed with apt). Built FROM the
    base's id; pinned (``MANIFEST``) with its Debian packages and the wheel lock's hash."""
    with _build_lock():
        ctx = prepare_services_context()
        context_hash = services_context_hash(base)
        labels = {LABEL_HASH: context_hash, "ipclab.image": "services"}
        if network_mode == "auto":
            network_mode = "none" if base == LOCAL_BASE else None
        image_id = _build(ctx, tag, _base_id(base), labels, "Dockerfile", network_mode)
        pin_build(
            tag, image_id, context_hash, base,
            wheel_lock_sha256=sha256_file(LOCK), wheels=len(read_lock()),
        )  # fmt: skip
    return tag


def build_recipe(recipe: ImageRecipe, base: str) -> str:
    """A recipe's image (``recipes.ImageRecipe``) FROM the tag ``base`` (by its id, so a tag
    moved meanwhile changes nothing), pinned (``MANIFEST``) with its Debian packages."""
    with _build_lock():
        ctx = prepare_recipe_context(recipe)
        context_hash = recipe_context_hash(recipe, base)
        labels = {LABEL_HASH: context_hash, "ipclab.image": recipe.kind}
        tag = recipe.image
        image_id = _build(ctx, tag, _base_id(base), labels, "Dockerfile", recipe.network)
        pin_build(tag, image_id, context_hash, base, **(recipe.record() if recipe.record else {}))
    return tag


def ensure_recipe(recipe: ImageRecipe, base: str) -> str:
    """A recipe's image's id, built first when missing, stale or not the recorded build."""
    with _build_lock():
        if recipe.base == "services":
            pinned(SERVICES_IMAGE)  # built on the services image the harness recorded
        why = stale(recipe.image, recipe_context_hash(recipe, base))
        if why:
            log(f"{recipe.image}: {why}")
            build_recipe(recipe, base)
        return pinned(recipe.image)


def ensure_java_image() -> str:
    """The Java image's id (the native adapters'), built first when missing or stale (on
    the current services image, which ``ensure_images`` made)."""
    return ensure_recipe(JAVA, SERVICES_IMAGE)


def _from(recipe: ImageRecipe, bases: Bases) -> str:
    """The tag a recipe's image is built FROM."""
    return SERVICES_IMAGE if recipe.base == "services" else str(getattr(bases, recipe.base))


def runtime_recipe(runtime: str) -> ImageRecipe | None:
    """The recipe of the image the roles of a ``runtime`` (``Runtime.name``) run; None for
    ``python``, whose roles run the services image itself."""
    if runtime == "python":
        return None
    for recipe in RUNTIME_RECIPES:
        if recipe.runtime == runtime:
            return recipe
    known = ", ".join(["python", *(r.runtime for r in RUNTIME_RECIPES)])
    raise ImageError(f"no image for the {runtime} runtime; known: {known}")


def runtime_image(runtime: str) -> str:
    """The tag of the image the roles of a ``runtime`` (``Runtime.name``) run."""
    recipe = runtime_recipe(runtime)
    return SERVICES_IMAGE if recipe is None else recipe.image


def infrastructure_recipes(names: Iterable[str]) -> tuple[ImageRecipe, ...]:
    """The image recipes of the infrastructure plugins ``names`` (a stack's
    ``infrastructure``), those that bring one."""
    from ipclab import infrastructure

    return tuple(p.recipe for p in infrastructure.of(tuple(names)) if p.recipe is not None)


def build_images(
    base: str = "auto",
    runtimes: Iterable[str] = (),
    infrastructure: Iterable[ImageRecipe] = (),
) -> dict[str, str]:
    """Build the services image, the images of ``runtimes`` (``go``, ...) and the
    ``infrastructure`` recipes' images; returns each one's key -> its pinned id."""
    with _build_lock():
        bases = resolve_bases(base)
        out = {"services": pinned(build_services_image(bases.python))}
        for runtime in runtimes:
            recipe = runtime_recipe(runtime)
            if recipe is not None:
                out[recipe.name] = pinned(build_recipe(recipe, SERVICES_IMAGE))
        for recipe in infrastructure:
            out[recipe.name] = pinned(build_recipe(recipe, _from(recipe, bases)))
    return out


def ensure_images(
    base: str = "auto", runtime: str = "python", infrastructure: Iterable[ImageRecipe] = ()
) -> dict[str, str]:
    """Build only what is missing, stale (its context hash differs from the working tree) or
    no longer the recorded build (the tag now names another image, or no build is recorded).

    Returns image *ids*, what a stack runs: ``services``, the image the roles of ``runtime``
    run (for ``go`` the Go image, for ``jvm`` the Java image, each built on the services
    image), and each ``infrastructure`` recipe's under its name (``broker``, ``database``)."""
    recipe = runtime_recipe(runtime)
    infrastructure = tuple(infrastructure)
    with _build_lock():
        if not (base == "auto" and _fresh_enough(infrastructure)):
            bases = resolve_bases(base)
            why = stale(SERVICES_IMAGE, services_context_hash(bases.python))
            if why:
                log(f"{SERVICES_IMAGE}: {why}")
                build_services_image(bases.python)
            for extra in infrastructure:
                ensure_recipe(extra, _from(extra, bases))
        if recipe is not None:
            ensure_recipe(recipe, SERVICES_IMAGE)
        return pinned_images(runtime, infrastructure)


def pinned_images(
    runtime: str = "python", infrastructure: Iterable[ImageRecipe] = ()
) -> dict[str, str]:
    """The ids a stack of ``runtime`` runs, without building: ``ImageError`` when a tag is not
    the build the harness recorded (see ``pinned``)."""
    out = {"services": pinned(runtime_image(runtime))}
    out.update({recipe.name: pinned(recipe.image) for recipe in infrastructure})
    return out


def _fresh_enough(infrastructure: Iterable[ImageRecipe] = ()) -> bool:
    """With base=auto: are the existing images the pinned, up-to-date builds for one of the
    possible bases?"""
    for bases in (Bases(LOCAL_BASE, LOCAL_BASE), Bases(OFFICIAL_PYTHON, OFFICIAL_RABBITMQ)):
        if not image_exists(bases.python):
            continue
        if bases.python == LOCAL_BASE:
            try:
                pinned(LOCAL_BASE)
            except ImageError:
                continue  # unrecorded or moved: resolve_bases decides
        ok = stale(SERVICES_IMAGE, services_context_hash(bases.python)) is None
        for recipe in infrastructure:
            base = _from(recipe, bases)
            ok = ok and stale(recipe.image, recipe_context_hash(recipe, base)) is None
        if ok:
            return True
    return False


def status() -> dict[str, Any]:
    out: dict[str, Any] = {}
    manifest = read_manifest()
    every = infrastructure_recipes(_plugin_names())
    recipes = (*RUNTIME_RECIPES, *every)
    for name in (
        LOCAL_BASE,
        OFFICIAL_PYTHON,
        OFFICIAL_RABBITMQ,
        SERVICES_IMAGE,
        *(r.image for r in recipes),
    ):
        image_id = image_id_of(name)
        out[name] = {
            "exists": image_id is not None,
            "id": image_id,
            "size_mb": image_size_mb(name),
        }
        if name in manifest:
            out[name]["pinned"] = manifest[name].get("id")
            out[name]["pin_holds"] = manifest[name].get("id") == image_id
            out[name]["apt_packages"] = len(manifest[name].get("apt_packages", []))
    # the services image and each infrastructure image built so far (recorded), current
    out["up_to_date"] = _fresh_enough([r for r in every if r.image in manifest])
    for recipe in RUNTIME_RECIPES:
        fresh = stale(recipe.image, recipe_context_hash(recipe, SERVICES_IMAGE)) is None
        out[f"{recipe.runtime}_up_to_date"] = fresh
    out["lock"] = {"path": str(LOCK), "wheels": len(read_lock()), "drift": lock_drift()}
    return out


def _plugin_names() -> tuple[str, ...]:
    from ipclab import infrastructure

    return infrastructure.names()


# --------------------------------------------------------------------------- CLI


def _build_command(args: argparse.Namespace) -> dict[str, str]:
    """``build``: the services image, the runtimes' and the infrastructure's asked for."""
    names = _plugin_names() if args.infrastructure is None else args.infrastructure.split(",")
    infra = infrastructure_recipes(n.strip() for n in names if n.strip())
    runtimes = [*args.runtime, *(["go"] if args.go else [])]
    if not args.if_needed:
        return build_images(base=args.base, runtimes=runtimes, infrastructure=infra)
    made = ensure_images(base=args.base, infrastructure=infra)
    for runtime in runtimes:
        recipe = runtime_recipe(runtime)
        if recipe is not None:
            made[recipe.name] = ensure_images(base=args.base, runtime=runtime)["services"]
    return made


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ipclab images", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("base", help="build the local Debian base (debootstrap + docker import)")
    b.add_argument("--tag", default=LOCAL_BASE)
    b.add_argument("--mirror", default=DEBIAN_MIRROR)
    b.add_argument("--force", action="store_true", help="rebuild even if it exists")
    bl = sub.add_parser("build", help="build the services and infrastructure images")
    bl.add_argument(
        "--base",
        default="auto",
        help="auto (default), official (python:3.11-slim, rabbitmq:3), local (debootstrap "
        "base, built if missing), or an image name (name@sha256:... pins one)",
    )
    bl.add_argument(
        "--infrastructure",
        metavar="NAMES",
        help="the infrastructure plugins whose images to build, comma-separated ('' none; "
        "default: every plugin that brings an image)",
    )
    bl.add_argument(
        "--runtime",
        action="append",
        default=[],
        choices=[r.runtime for r in RUNTIME_RECIPES],
        help="also the image of this runtime's roles (built on the host's toolchain)",
    )
    bl.add_argument("--go", action="store_true", help="as --runtime go")
    bl.add_argument("--if-needed", action="store_true", help="skip images already up to date")
    sub.add_parser("status", help="which images exist and whether they are up to date")
    lk = sub.add_parser(
        "lock",
        help=f"rewrite {LOCK.relative_to(REPO_ROOT)} (uv) from the host's installed versions",
    )
    lk.add_argument(
        "--constraint",
        type=Path,
        metavar="FILE",
        help="pins (name==version lines) to resolve to instead of the host's pip freeze",
    )
    args = p.parse_args(argv)
    try:
        if args.cmd == "base":
            with _build_lock():
                if local_base_current(args.tag) and not args.force:
                    log(f"{args.tag} exists (use --force to rebuild)")
                else:
                    build_base_image(args.tag, args.mirror)
            print(args.tag)
        elif args.cmd == "build":
            for role, image in _build_command(args).items():
                print(f"{role}\t{image}")
        elif args.cmd == "lock":
            cons = None if args.constraint is None else args.constraint.read_text()
            print(write_lock(constraints=cons))
        else:
            import json

            print(json.dumps(status(), indent=2))
    except (ImageError, subprocess.CalledProcessError) as e:
        print(f"ipclab images: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
