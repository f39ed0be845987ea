"""Serialisation formats on the data bundle (Johansson 2017, thesis Tables 5.1 and 5.2).

XML, JSON (orjson, and the standard library's for reference), Thrift binary (thriftpy2)
and Protocol Buffers, each from and to its library's in-memory form, on the bundles of the
thesis's tests 2 and 3 (25 and 50 rows per table). Bytes are exact; encode and decode
times are per operation. The replicate is a process (docs/statistics.md section 1): each
of ``--processes`` fresh interpreters makes ``--rounds`` interleaved rounds (a shuffled
order per round), averaged into one value per format and size; the times are the mean over
processes with its 95% t interval. The logic is ``ipclab.studies.johansson.serialisation``
(the study's notebook runs it too). The defaults are the full profile's (about 6 minutes on
a 2-core VM, 34 s a process); ``--processes 3 --rounds 1 --seconds 0.05`` is the quick one
(about 12 s).

    python bench/serialisation.py [--processes 10] [--rounds 3] [--seconds 0.3]
                                  [--sizes 25,50] [--json bench/results/serialisation.json]

No Thrift-vs-Protocol Buffers time order is asserted anywhere: the thesis's sources
disagree, and library speed in Python says little about the formats themselves.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import pandas as pd

from ipclab.studies.johansson import serialisation as ser

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--processes", type=int, default=10, help="replicates (default 10)")
    ap.add_argument("--rounds", type=int, default=3, help="per process (default 3)")
    ap.add_argument("--seconds", type=float, default=0.3, help="per batch (default 0.3)")
    ap.add_argument("--sizes", default="25,50", help="rows per table (default 25,50)")
    ap.add_argument("--seed", type=int, default=2017)
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    a = ap.parse_args(argv)
    sizes = tuple(int(s) for s in a.sizes.split(","))
    table = ser.measure(a.processes, a.rounds, a.seconds, sizes, a.seed, progress=print)
    summary = ser.summary(table)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        cols = ["rows", "style", "bytes", "encode_us", "encode_us_ci", "decode_us",
                "decode_us_ci", "bytes_vs_json", "roundtrip_us_vs_json"]  # fmt: skip
        print(summary[cols].round(3).to_string(index=False))
    for line in ser.unavailable():
        print("not measured:", line)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "processes": a.processes,
            "rounds": a.rounds,
            "seconds": a.seconds,
            "sizes": list(sizes),
            "unavailable": ser.unavailable(),
            "results": table.to_dict("records"),
            "summary": summary.to_dict("records"),
        }
        a.json.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
