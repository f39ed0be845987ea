"""The serialisation comparison of Johansson's chapter 5 (Tables 5.1 and 5.2) as a
micro-benchmark on the bundles of tests 2 and 3 (25 and 50 rows per table).

Formats, each with its library's own in-memory form (what the library serialises from and
deserialises to; building that form from the gateway's dicts is not timed):

=============  ===========================================  ==========================
style          library                                      in-memory form
=============  ===========================================  ==========================
``xml``        ``xml.etree.ElementTree`` (standard library)  an Element tree
``json``       ``orjson`` (the gateways' JSON encoder)       dicts and lists
``json-std``   ``json`` (standard library; not in claims)    dicts and lists
``thrift``     ``thriftpy2``, binary protocol (Cython)       generated structs
``protobuf``   ``protobuf`` (upb), ``Bundle`` of bundle.proto  a message
=============  ===========================================  ==========================

A **round** times every format and size once, in a shuffled order (seeded): per direction
a batch of operations lasting about ``seconds``, with the garbage collector off (as
``timeit``); the per-operation time is the batch's time over its count. **The replicate is
a process** (docs/statistics.md section 1: the run is the unit): each is a fresh Python
interpreter (its own imports, allocator, caches and CPU placement) that makes ``rounds``
rounds; the rounds of one process share its state, so they are averaged into one value per
format and size (:func:`per_process`), and intervals and tests are over processes. A table
made before processes were the unit (no ``process`` column: all its rounds in one process)
is one replicate. ``bytes`` is exact. A format whose library is missing is left out and
named (:func:`unavailable`).

The thesis draws no Thrift-vs-Protocol Buffers time order (its sources disagree); neither
does this module: the claims compare only what the thesis states.
"""

from __future__ import annotations

import gc
import io
import json
import random
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import orjson
import pandas as pd
from ipclab_services.domains.bundle import data

from ipclab import stats

SIZES = (25, 50)  # rows per table: the bundles of thesis tests 2 and 3
METRICS = ("bytes", "encode_us", "decode_us", "roundtrip_us")
Bundle = dict[str, list[dict[str, str]]]

THRIFT_IDL = """
struct Person { 1: string id, 2: string name }
struct Animal { 1: string type, 2: string name }
struct Car { 1: string model, 2: string color }
struct Building { 1: string address, 2: string department }
struct Bundle {
  1: list<Person> person, 2: list<Animal> animal, 3: list<Car> car, 4: list<Building> building
}
"""


@dataclass(frozen=True)
class Format:
    style: str
    package: str  # whose version is recorded
    to_native: Callable[[Bundle], Any]  # the gateway's dicts -> the library's form (untimed)
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    to_bundle: Callable[[Any], Bundle]  # the library's form -> dicts (to check the round trip)


def _xml_format() -> Format:
    def to_native(b: Bundle) -> ET.Element:
        root = ET.Element("bundle")
        for table, rows in b.items():
            t = ET.SubElement(root, table)
            for r in rows:
                row = ET.SubElement(t, "row")
                for k, v in r.items():
                    ET.SubElement(row, k).text = v
        return root

    def to_bundle(root: ET.Element) -> Bundle:
        return {t.tag: [{c.tag: c.text or "" for c in row} for row in t] for t in root}

    return Format(
        "xml", "python", to_native, lambda e: ET.tostring(e, encoding="utf-8"), ET.fromstring,
        to_bundle,
    )  # fmt: skip


def _json_formats() -> list[Format]:
    same: Callable[[Any], Any] = lambda b: b  # noqa: E731
    return [
        Format("json", "orjson", same, orjson.dumps, orjson.loads, same),
        Format(
            "json-std",
            "python",
            same,
            lambda b: json.dumps(b, separators=(",", ":")).encode(),
            json.loads,
            same,
        ),  # fmt: skip
    ]


def _protobuf_format() -> Format:
    from google.protobuf.json_format import MessageToDict
    from ipclab_services.proto import bundle_pb2 as pb

    kinds = {"person": pb.Person, "animal": pb.Animal, "car": pb.Car, "building": pb.Building}

    def to_native(b: Bundle) -> Any:
        return pb.Bundle(**{t: [kinds[t](**r) for r in rows] for t, rows in b.items()})

    def to_bundle(m: Any) -> Bundle:
        d = MessageToDict(m, preserving_proto_field_name=True)
        return {t: d.get(t, []) for t in data.TABLES}

    return Format(
        "protobuf", "protobuf", to_native, lambda m: m.SerializeToString(),
        pb.Bundle.FromString, to_bundle,
    )  # fmt: skip


def _thrift_format() -> Format:
    import thriftpy2
    from thriftpy2.protocol import TCyBinaryProtocolFactory
    from thriftpy2.utils import deserialize, serialize

    idl = thriftpy2.load_fp(io.StringIO(THRIFT_IDL), module_name="ipclab_bundle_thrift")
    kinds = {"person": idl.Person, "animal": idl.Animal, "car": idl.Car,
             "building": idl.Building}  # fmt: skip
    factory = TCyBinaryProtocolFactory()

    def to_native(b: Bundle) -> Any:
        return idl.Bundle(**{t: [kinds[t](**r) for r in rows] for t, rows in b.items()})

    def to_bundle(s: Any) -> Bundle:
        cols = data.TABLES
        return {t: [{c: getattr(r, c) for c in cols[t]} for r in getattr(s, t)] for t in cols}

    return Format(
        "thrift", "thriftpy2", to_native, lambda s: serialize(s, factory),
        lambda buf: deserialize(idl.Bundle(), buf, factory), to_bundle,
    )  # fmt: skip


_MISSING: dict[str, str] = {}


def formats() -> list[Format]:
    """Every format whose library is installed (see :func:`unavailable` for the others)."""
    out = [_xml_format(), *_json_formats()]
    for style, make, package in (
        ("thrift", _thrift_format, "thriftpy2"),
        ("protobuf", _protobuf_format, "protobuf"),
    ):
        try:
            out.append(make())
        except ImportError as e:
            _MISSING[style] = f"{style}: {package} is not installed ({e}); pip install {package}"
    return out


def unavailable() -> list[str]:
    """Why a format is missing, one line each (after :func:`formats`)."""
    return sorted(_MISSING.values())


def version(package: str) -> str:
    if package == "python":
        import platform

        return platform.python_version()
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "?"


def _per_op_us(fn: Callable[[], Any], seconds: float) -> float:
    """Microseconds per call of ``fn``: a batch of calls lasting about ``seconds``."""
    n, elapsed = 1, 0.0
    gc_was = gc.isenabled()
    gc.disable()
    try:
        while True:  # grow the batch until it lasts a fifth of the budget, then time it
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            elapsed = time.perf_counter() - t0
            if elapsed >= seconds / 5 or n >= 1 << 22:
                break
            n *= 2
        n = max(1, int(n * seconds / max(elapsed, 1e-9)))
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - t0
    finally:
        if gc_was:
            gc.enable()
    return elapsed / n * 1e6


def check_round_trip(fmt: Format, rows: int) -> int:
    """Encode then decode the bundle of ``rows`` rows per table; its bytes if the result is
    the same bundle, else ValueError."""
    bundle = data.bundle(rows)
    blob = fmt.encode(fmt.to_native(bundle))
    back = fmt.to_bundle(fmt.decode(blob))
    if back != bundle:
        raise ValueError(f"{fmt.style}: the round trip changed the bundle of {rows} rows")
    return len(blob)


def measure(
    processes: int = 3,
    rounds: int = 3,
    seconds: float = 0.2,
    sizes: Sequence[int] = SIZES,
    seed: int = 2017,
    only: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """One row per process, round, format and size: ``process, round, style, rows, users``
    (= rows, for the claims machinery), ``bytes, encode_us, decode_us, roundtrip_us,
    library, version``. Each process is a fresh interpreter (:func:`_in_process`) making
    ``rounds`` rounds, seeded ``seed`` + its number."""
    if processes < 1 or rounds < 1 or seconds <= 0:
        raise ValueError("processes and rounds must be at least 1 and seconds positive")
    if not [f for f in formats() if only is None or f.style in only]:
        raise ValueError(f"no format to measure (asked for {only}; {unavailable()})")
    out = []
    for p in range(1, processes + 1):
        rows = _in_process(rounds, seconds, sizes, seed + p, only)
        out += [{"process": p, **r} for r in rows]
        if progress:
            progress(f"[serialisation] process {p}/{processes} done ({rounds} rounds)")
    return pd.DataFrame(out).sort_values(["rows", "style", "process", "round"], ignore_index=True)


def _in_process(
    rounds: int, seconds: float, sizes: Sequence[int], seed: int, only: Sequence[str] | None
) -> list[dict[str, Any]]:
    """:func:`measure_rounds` in a fresh Python interpreter (``python -m`` this module), its
    rows read back as JSON; the child is killed if this one is interrupted or it hangs."""
    import os
    import subprocess
    import sys

    job = {"rounds": rounds, "seconds": seconds, "sizes": list(sizes), "seed": seed,
           "only": list(only) if only is not None else None}  # fmt: skip
    budget = 120 + 40 * rounds * len(sizes) * len(formats()) * seconds
    done = subprocess.run(
        [sys.executable, "-m", __name__, "--worker", json.dumps(job)],
        capture_output=True, text=True, timeout=budget, env=os.environ.copy(), check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(
            f"serialisation process failed ({done.returncode}): {done.stderr[-800:]}"
        )
    return json.loads(done.stdout)


def measure_rounds(
    rounds: int = 5,
    seconds: float = 0.2,
    sizes: Sequence[int] = SIZES,
    seed: int = 2017,
    only: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The rounds of one process, in this interpreter: one row per round, format and size."""
    fmts = [f for f in formats() if only is None or f.style in only]
    if not fmts:
        raise ValueError(f"no format to measure (asked for {only}; {unavailable()})")
    natives, blobs = {}, {}
    for f in fmts:
        for n in sizes:
            check_round_trip(f, n)
            natives[f.style, n] = f.to_native(data.bundle(n))
            blobs[f.style, n] = f.encode(natives[f.style, n])
    rng = random.Random(seed)
    out = []
    for r in range(1, rounds + 1):
        order = [(f, n) for f in fmts for n in sizes]
        rng.shuffle(order)
        for f, n in order:
            native, blob = natives[f.style, n], blobs[f.style, n]
            enc = _per_op_us(lambda f=f, x=native: f.encode(x), seconds)
            dec = _per_op_us(lambda f=f, b=blob: f.decode(b), seconds)
            out.append(
                {
                    "round": r, "style": f.style, "rows": n, "users": n, "bytes": len(blob),
                    "encode_us": enc, "decode_us": dec, "roundtrip_us": enc + dec,
                    "library": f.package, "version": version(f.package),
                }
            )  # fmt: skip
    return out


def per_process(table: pd.DataFrame) -> pd.DataFrame:
    """The replicates: per process, format and size, the mean over its rounds of each time
    (``bytes`` is exact), with ``rounds`` their number. A table without ``process`` (made
    before processes were the unit: every round in one process) is one process."""
    if table.empty:
        return table
    t = table if "process" in table.columns else table.assign(process=1)
    keys = ["process", "style", "rows"]
    out = t.groupby(keys, sort=True).agg(
        users=("users", "first"), bytes=("bytes", "first"), encode_us=("encode_us", "mean"),
        decode_us=("decode_us", "mean"), roundtrip_us=("roundtrip_us", "mean"),
        rounds=("round", "nunique"), library=("library", "first"), version=("version", "first"),
    )  # fmt: skip
    return out.reset_index().sort_values(["rows", "style", "process"], ignore_index=True)


def cells(table: pd.DataFrame) -> pd.DataFrame:
    """Per size and format: mean over processes (:func:`per_process`) of each metric with
    its 95% t interval."""
    return stats.cell_summary(per_process(table), METRICS, by=("rows", "style"))


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """A wide table per size and format: bytes and each time as ``mean [low, high]`` µs
    over processes, and the size and times relative to JSON (orjson)."""
    c = cells(table)
    out = []
    for (rows, style), g in c.groupby(["rows", "style"], sort=True):
        m = g.set_index("metric")
        row: dict[str, Any] = {"rows": int(rows), "style": style,
                               "bytes": int(m.loc["bytes", "mean"])}  # fmt: skip
        for metric in METRICS[1:]:
            mean, lo, hi = m.loc[metric, ["mean", "ci_low", "ci_high"]]
            row[metric] = mean
            row[f"{metric}_ci"] = (
                f"[{lo:.2f}, {hi:.2f}]" if pd.notna(lo) and pd.notna(hi) else "(1 process)"
            )
        out.append(row)
    df = pd.DataFrame(out)
    for metric in METRICS:
        ref = df[df["style"] == "json"].set_index("rows")[metric]
        df[f"{metric}_vs_json"] = df[metric] / df["rows"].map(ref)
    return df


def _worker(argv: Sequence[str]) -> int:
    """``python -m ipclab.studies.johansson.serialisation --worker JOB``: one process's
    rounds (:func:`measure_rounds`) as JSON on stdout."""
    if len(argv) != 2 or argv[0] != "--worker":
        raise SystemExit("usage: python -m ipclab.studies.johansson.serialisation --worker JOB")
    job = json.loads(argv[1])
    rows = measure_rounds(job["rounds"], job["seconds"], job["sizes"], job["seed"], job["only"])
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(_worker(sys.argv[1:]))
