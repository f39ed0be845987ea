"""TLS as a factor of the Shafabakhsh matrix (issue 32): what encryption on every hop costs
each style, and the thesis's remark that it costs REST more than gRPC.

The thesis's clients sent their requests "over HTTPS to the API gateway endpoint" (section
4.1) and its discussion (section 6.1) says that "adding extra security mechanism to REST API
based communication can lead to a decline in communication performance which does not occur
in gRPC communication as gRPC takes advantage of multiplexed stream function and header
compression that exists in HTTP/2.0". Here the Python matrix runs twice in one sitting, in
the clear and with ``--tls`` (HTTPS to the gateway, HTTPS, gRPC over TLS or AMQPS behind it;
a private authority per stack start), the two variants' cells shuffled together in each
repetition (``Experiment``'s variants), so the ratio TLS / plain of each style is measured
on one machine state.

What it gives: per style and load, TLS / plain of throughput, mean latency and the stack's
CPU per request with log-ratio intervals (``ratio_table``); and the thesis's remark as an
interaction per load and metric (``claims``): REST's TLS / plain over gRPC's, below 1 for
throughput (REST loses more), above 1 for latency and CPU. In the claims' table the
"load" of an interaction is the TLS factor (0: plain, 1: TLS) and each real load is a
style of its own (``rest@200``), so the study's interaction test applies unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ipclab import claims as claims_mod
from ipclab import stats
from ipclab.backends import StackOptions
from ipclab.experiments import Experiment
from ipclab.paths import from_repo
from ipclab.published import Claim
from ipclab.runs import DEFAULT_ROOT, Run
from ipclab.stats import log_ratio_interval
from ipclab.studies.shafabakhsh.stacks import COMPARED

VARIANTS = {"plain": StackOptions(), "tls": StackOptions(tls=True)}
METRICS = ("rps", "mean_ms", "stack_cpu_ms_per_request")
FAMILY = "tls"
QUOTE = (
    "adding extra security mechanism to REST API based communication can lead to a decline "
    "in communication performance which does not occur in gRPC communication as gRPC takes "
    "advantage of multiplexed stream function and header compression that exists in HTTP/2.0"
)
# REST's TLS / plain against gRPC's: REST loses more throughput, gains more latency and CPU
_RELATION = {"rps": "<", "mean_ms": ">", "stack_cpu_ms_per_request": ">"}


@dataclass(frozen=True)
class TlsProfile:
    users: tuple[int, ...]
    repetitions: int
    duration_s: float  # per run, warm-up included
    warmup_s: float


PROFILES = {
    "quick": TlsProfile(users=(50,), repetitions=1, duration_s=6, warmup_s=2),
    # the Go matrix's window (60 s measured after 10 s), the Python matrix's loads and
    # repetitions: 90 runs in one sitting
    "full": TlsProfile(users=(50, 100, 200), repetitions=5, duration_s=70, warmup_s=10),
}


def experiment(profile_name: str, backend: str = "local", root: Path = DEFAULT_ROOT) -> Experiment:
    """The matrix in the clear and with TLS, both variants' cells shuffled together."""
    p = PROFILES[profile_name]
    return Experiment(
        name=f"shafabakhsh-tls-{profile_name}-{backend}",
        stacks=[s.name for s in COMPARED],
        users=p.users,
        repetitions=p.repetitions,
        duration_s=p.duration_s,
        warmup_s=p.warmup_s,
        backend=backend,
        root=from_repo(root),
        variants=VARIANTS,
    )


def runs_table(runs: list[Run], warmup_s: float) -> pd.DataFrame:
    """One row per run (``stats.runs_table``'s), its ``variant`` plain or tls."""
    return stats.runs_table(runs, warmup_s=warmup_s)


def ratio_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per style, load and metric: the means in the clear and with TLS, and TLS / plain with
    its log-ratio interval (the runs are the unit)."""
    rows = []
    for (style, users), g in runs.groupby(["style", "users"]):
        for metric in METRICS:
            if metric not in g:
                continue
            tls = g.loc[g["variant"] == "tls", metric].dropna().to_numpy(float)
            plain = g.loc[g["variant"] == "plain", metric].dropna().to_numpy(float)
            if not len(tls) or not len(plain):
                continue
            r = log_ratio_interval([(1, [tls]), (-1, [plain])])
            rows.append(
                {
                    "style": style, "users": int(users), "metric": metric,
                    "runs": min(len(tls), len(plain)),
                    "plain": float(plain.mean()), "tls": float(tls.mean()),
                    "tls_over_plain": r.estimate, "low": r.low, "high": r.high,
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def claims(users: tuple[int, ...]) -> list[Claim]:
    """The thesis's remark as interactions, one per load and metric: REST's growth from plain
    (``0``) to TLS (``1``) over gRPC's."""
    out = []
    for u in users:
        for metric in METRICS:
            out.append(
                Claim(
                    claim_id=f"TLS-{metric}-{u}", statement_id="TLS", document="thesis",
                    section="6.1", page="-", quote=QUOTE, scope="performance", metric=metric,
                    test="interaction", relation=_RELATION[metric],
                    a_style=f"rest@{u}", a_users=(), b_style=f"grpc@{u}", b_users=(),
                    from_users=0, to_users=1, published_value="", published_unit="",
                    table_value="", published_ratio=None, band_low=None, band_high=None,
                    note=f"at {u} users: (REST TLS / plain) / (gRPC TLS / plain) "
                    f"{_RELATION[metric]} 1; the 'load' 0 is plain, 1 TLS",
                )
            )  # fmt: skip
    return out


def claims_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The per-run table the claims read: each real load a style of its own, the TLS factor
    the load (0: plain, 1: TLS)."""
    return runs.assign(
        style=runs["style"] + "@" + runs["users"].astype(int).astype(str),
        users=(runs["variant"] == "tls").astype(int),
    )


@dataclass
class Analysis:
    profile: str
    runs: pd.DataFrame
    ratios: pd.DataFrame
    claims: pd.DataFrame
    machine: pd.DataFrame


def analyse(runs: list[Run], profile_name: str) -> Analysis:
    p = PROFILES[profile_name]
    table = runs_table(runs, p.warmup_s)
    users = tuple(sorted(int(u) for u in table["users"].unique())) if len(table) else ()
    judged = claims_mod.evaluate_claims(claims_table(table), claims(users), family=FAMILY)
    return Analysis(
        profile=profile_name,
        runs=table,
        ratios=ratio_table(table),
        claims=judged,
        machine=stats.machine_check(table, by=("variant", "style", "users")),
    )
