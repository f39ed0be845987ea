"""Write the domain's data as the file ``IPCLAB_FIXTURE`` names, then become the role.

    python -m ipclab_services.fixture COMMAND [ARG...]

The entrypoint of the images whose roles are built in another language (the Go image):
the data comes from the same Python generator as in every Python stack (the domain's
``write_fixture``, from this container's knobs: ``IPCLAB_SEED``, ``IPCLAB_CATALOGUE_SIZE``,
``IPCLAB_CUSTOMERS``), then ``COMMAND`` replaces this process (``exec``), keeping its pid
and environment. The gateway loads no data, so none is written for it. A file already
there (a restarted container keeps its filesystem and environment) is used as it is: the
roles check its seed and sizes against their environment.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ipclab_services import domains


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m ipclab_services.fixture COMMAND [ARG...]")
    env = os.environ
    path = Path(env.get("IPCLAB_FIXTURE", ""))
    if not env.get("IPCLAB_FIXTURE"):
        sys.exit("IPCLAB_FIXTURE is not set: where should the data go?")
    if env.get("IPCLAB_ROLE") != env.get("IPCLAB_GATEWAY", "gateway") and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        domains.load(env["IPCLAB_DOMAIN"]).write_fixture(path, env)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
