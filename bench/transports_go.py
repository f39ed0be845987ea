"""The Python floor and the Go rows of bench/transports.py only (issue 18). The Go rows are
measured by ``go_rows.py`` (see there); ``transports.py`` runs them in its rounds.

    python bench/transports.py --go [--only rest,grpc,amqp] [--rounds 3]   # Python and Go
    python bench/transports_go.py [transports.py options]                  # floor + Go rows
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """The Python floor and the Go rows only, through transports.py."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import transports
    from go_rows import NAMES

    argv = list(sys.argv[1:] if argv is None else argv)
    return int(transports.main([*argv, "--only", ",".join(NAMES)]))


if __name__ == "__main__":
    sys.exit(main())
