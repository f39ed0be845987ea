"""Published numbers and claims of Shafabakhsh 2020, read from ``data/published/``.

Three CSV files (described in ``data/published/README.md``):

* ``shafabakhsh2020_performance.csv``: thesis Tables 5.1-5.3 (one row per method and load);
* ``shafabakhsh2020_availability.csv``: thesis Table 5.4;
* ``shafabakhsh2020_claims.csv``: every claim of thesis chapter 5 (and its conclusion) and
  paper sections 4-6, one row per testable comparison, with a machine-readable test spec.

Every loader validates columns, types and allowed values and raises
:class:`PublishedDataError` naming the file, the row and the problem.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ipclab.paths import PUBLISHED_DIR

DATA_DIR = PUBLISHED_DIR
PERFORMANCE_CSV = DATA_DIR / "shafabakhsh2020_performance.csv"
AVAILABILITY_CSV = DATA_DIR / "shafabakhsh2020_availability.csv"
CLAIMS_CSV = DATA_DIR / "shafabakhsh2020_claims.csv"

STYLES = ("rest", "grpc", "amqp")
DOCUMENTS = ("thesis", "paper")
SCOPES = ("performance", "availability", "complexity")
TESTS = ("direction", "ratio", "equal", "differ", "interaction", "compare")
RELATIONS = (">", "<", "=", "!=")
#: The style names the documents print, mapped to ipclab's style names.
METHOD_STYLE = {"rest api": "rest", "grpc": "grpc", "rabbitmq": "amqp"}

_PAGE = re.compile(r"^\d+(-\d+)?$")


class PublishedDataError(ValueError):
    """A published-data CSV is missing, malformed or inconsistent."""


def _read(path: Path, columns: Sequence[str]) -> pd.DataFrame:
    if not path.exists():
        raise PublishedDataError(f"{path}: file not found")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        raise PublishedDataError(f"{path}: not a readable CSV ({e})") from e
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise PublishedDataError(f"{path}: missing column(s) {', '.join(missing)}")
    if df.empty:
        raise PublishedDataError(f"{path}: no rows")
    return df


def _fail(path: Path, i: int, msg: str) -> PublishedDataError:
    # i is the 0-based data row; +2 gives the line number in the file (header is line 1)
    return PublishedDataError(f"{path}, line {i + 2}: {msg}")


def _num(
    df: pd.DataFrame,
    path: Path,
    col: str,
    kind: type,
    *,
    required: bool = True,
    positive: bool = False,
) -> pd.Series:
    out = []
    for i, raw in enumerate(df[col]):
        s = raw.strip()
        if s == "":
            if required:
                raise _fail(path, i, f"{col} is empty")
            out.append(None)
            continue
        try:
            v = kind(s)
        except ValueError:
            raise _fail(path, i, f"{col}={raw!r} is not {kind.__name__}") from None
        if positive and v <= 0:
            raise _fail(path, i, f"{col}={raw!r} must be positive")
        out.append(v)
    dtype = "Int64" if kind is int else "Float64"
    return pd.Series(out, index=df.index, dtype=dtype)


def _choice(
    df: pd.DataFrame, path: Path, col: str, allowed: Sequence[str], *, required: bool = True
) -> None:
    for i, v in enumerate(df[col]):
        if v == "" and not required:
            continue
        if v not in allowed:
            raise _fail(path, i, f"{col}={v!r} not one of {', '.join(allowed)}")


def _pages(df: pd.DataFrame, path: Path) -> None:
    for i, v in enumerate(df["page"].astype(str)):
        if not _PAGE.match(v):
            raise _fail(path, i, f"page={v!r} is not a page or a page range like 35-36")


def _method_styles(df: pd.DataFrame, path: Path) -> None:
    for i, (m, s) in enumerate(zip(df["method"], df["style"], strict=True)):
        if METHOD_STYLE.get(m.strip().lower()) != s:
            raise _fail(path, i, f"method {m!r} does not map to style {s!r}")


def load_performance(path: str | Path | None = None) -> pd.DataFrame:
    """Thesis Tables 5.1-5.3: ``document, table, page, method, style, users, duration_s,
    mean_rt_s, total_requests, note`` (numbers exactly as printed)."""
    p = Path(path) if path is not None else PERFORMANCE_CSV
    cols = (
        "document",
        "table",
        "page",
        "method",
        "style",
        "users",
        "duration_s",
        "mean_rt_s",
        "total_requests",
        "note",
    )
    df = _read(p, cols)
    _choice(df, p, "document", DOCUMENTS)
    _choice(df, p, "style", STYLES)
    _method_styles(df, p)
    out = df.loc[:, list(cols)].copy()
    out["page"] = _num(df, p, "page", int, positive=True)
    out["users"] = _num(df, p, "users", int, positive=True)
    out["duration_s"] = _num(df, p, "duration_s", float, positive=True)
    out["mean_rt_s"] = _num(df, p, "mean_rt_s", float, positive=True)
    out["total_requests"] = _num(df, p, "total_requests", int, positive=True)
    dup = out.duplicated(["document", "style", "users"])
    if dup.any():
        raise _fail(p, int(dup.to_numpy().nonzero()[0][0]), "duplicate (document, style, users)")
    return out


def load_availability(path: str | Path | None = None) -> pd.DataFrame:
    """Thesis Table 5.4: ``document, table, page, method, style, users, mttf_s, mttr_s,
    availability, approximate, note``; ``approximate`` is True where the table prints "~"."""
    p = Path(path) if path is not None else AVAILABILITY_CSV
    cols = (
        "document",
        "table",
        "page",
        "method",
        "style",
        "users",
        "mttf_s",
        "mttr_s",
        "availability",
        "approximate",
        "note",
    )
    df = _read(p, cols)
    _choice(df, p, "document", DOCUMENTS)
    _choice(df, p, "style", STYLES)
    _choice(df, p, "approximate", ("true", "false"))
    _method_styles(df, p)
    out = df.loc[:, list(cols)].copy()
    out["page"] = _num(df, p, "page", int, positive=True)
    out["users"] = _num(df, p, "users", int, positive=True)
    out["mttf_s"] = _num(df, p, "mttf_s", float, positive=True)
    out["mttr_s"] = _num(df, p, "mttr_s", float, positive=True)
    out["availability"] = _num(df, p, "availability", float, positive=True)
    for i, a in enumerate(out["availability"]):
        if a > 1:
            raise _fail(p, i, f"availability={a} is above 1")
    out["approximate"] = df["approximate"] == "true"
    return out


def availability() -> pd.DataFrame:
    """Alias of :func:`load_availability`
    (used by ``ipclab.studies.shafabakhsh.availability_published``)."""
    return load_availability()


CLAIM_COLUMNS = (
    "claim_id",
    "statement_id",
    "document",
    "section",
    "page",
    "quote",
    "scope",
    "metric",
    "test",
    "relation",
    "a_style",
    "a_users",
    "b_style",
    "b_users",
    "from_users",
    "to_users",
    "published_value",
    "published_unit",
    "table_value",
    "published_ratio",
    "band_low",
    "band_high",
    "note",
)


@dataclass(frozen=True)
class Claim:
    """One testable comparison of a published statement.

    * ``direction``: metric(a_style @ a_users) ``relation`` metric(b_style @ b_users); users
      may be several loads, meaning the metric averaged over them.
    * ``ratio``: as direction, and the ratio a/b lies in [band_low, band_high].
    * ``equal`` / ``differ``: the ratio a/b lies inside / outside [band_low, band_high].
    * ``interaction``: growth of the metric from ``from_users`` to ``to_users`` for a_style
      divided by the same growth for b_style, compared with 1 by ``relation``.
    * ``compare``: a deterministic measurement (code size) of a_style vs b_style.
    """

    claim_id: str
    statement_id: str
    document: str
    section: str
    page: str
    quote: str
    scope: str
    metric: str
    test: str
    relation: str
    a_style: str
    a_users: tuple[int, ...]
    b_style: str
    b_users: tuple[int, ...]
    from_users: int | None
    to_users: int | None
    published_value: str
    published_unit: str
    table_value: str
    published_ratio: float | None
    band_low: float | None
    band_high: float | None
    note: str

    @property
    def source(self) -> str:
        return f"{self.document} §{self.section}, p. {self.page}"

    def describe(self) -> str:
        """A short text of the comparison, e.g. ``rps: grpc@50 > rest@50``."""

        def side(style: str, users: tuple[int, ...]) -> str:
            if not users:
                return style
            u = "+".join(map(str, users))
            return f"{style}@{u}" if len(users) == 1 else f"{style}@avg({u})"

        if self.test == "interaction":
            f, t = self.from_users, self.to_users
            return f"{self.metric} growth {f}->{t}: {self.a_style} {self.relation} {self.b_style}"
        if self.test in ("equal", "differ"):
            rel = "~=" if self.test == "equal" else "!="
            return (
                f"{self.metric}: {side(self.a_style, self.a_users)} {rel} "
                f"{side(self.b_style, self.b_users)}"
            )
        return (
            f"{self.metric}: {side(self.a_style, self.a_users)} {self.relation} "
            f"{side(self.b_style, self.b_users)}"
        )


def _users(path: Path, i: int, col: str, raw: str) -> tuple[int, ...]:
    if raw.strip() == "":
        return ()
    try:
        vals = tuple(int(x) for x in raw.split(";"))
    except ValueError:
        raise _fail(path, i, f"{col}={raw!r} is not a load or loads separated by ';'") from None
    if any(v <= 0 for v in vals):
        raise _fail(path, i, f"{col}={raw!r} must be positive")
    return vals


def _opt_float(path: Path, i: int, col: str, raw: str) -> float | None:
    if raw.strip() == "":
        return None
    try:
        return float(raw)
    except ValueError:
        raise _fail(path, i, f"{col}={raw!r} is not a number") from None


def _opt_int(path: Path, i: int, col: str, raw: str) -> int | None:
    if raw.strip() == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise _fail(path, i, f"{col}={raw!r} is not an integer") from None


def _claim(path: Path, i: int, r: dict[str, str]) -> Claim:
    c = Claim(
        claim_id=r["claim_id"],
        statement_id=r["statement_id"],
        document=r["document"],
        section=r["section"],
        page=r["page"],
        quote=r["quote"],
        scope=r["scope"],
        metric=r["metric"],
        test=r["test"],
        relation=r["relation"],
        a_style=r["a_style"],
        a_users=_users(path, i, "a_users", r["a_users"]),
        b_style=r["b_style"],
        b_users=_users(path, i, "b_users", r["b_users"]),
        from_users=_opt_int(path, i, "from_users", r["from_users"]),
        to_users=_opt_int(path, i, "to_users", r["to_users"]),
        published_value=r["published_value"],
        published_unit=r["published_unit"],
        table_value=r["table_value"],
        published_ratio=_opt_float(path, i, "published_ratio", r["published_ratio"]),
        band_low=_opt_float(path, i, "band_low", r["band_low"]),
        band_high=_opt_float(path, i, "band_high", r["band_high"]),
        note=r["note"],
    )
    if not c.claim_id.startswith(c.statement_id):
        raise _fail(path, i, f"claim_id {c.claim_id!r} does not start with {c.statement_id!r}")
    if not c.quote.strip():
        raise _fail(path, i, "quote is empty")
    if not c.metric:
        raise _fail(path, i, "metric is empty")
    if c.test == "interaction":
        if c.from_users is None or c.to_users is None:
            raise _fail(path, i, "an interaction needs from_users and to_users")
        if c.relation not in ("<", ">"):
            raise _fail(path, i, "an interaction's relation must be < or >")
    elif c.test == "compare":
        if c.relation not in ("<", ">"):
            raise _fail(path, i, "a compare claim's relation must be < or >")
    else:
        if (
            c.scope != "complexity"
            and c.metric != "outage_failure_fraction"
            and (not c.a_users or not c.b_users)
        ):
            raise _fail(path, i, f"a {c.test} claim needs a_users and b_users")
        allowed = {
            "direction": ("<", ">"),
            "ratio": ("<", ">"),
            "equal": ("=",),
            "differ": ("!=",),
        }[c.test]
        if c.relation not in allowed:
            raise _fail(path, i, f"relation {c.relation!r} does not fit test {c.test!r}")
    if c.test in ("ratio", "equal", "differ") and (
        c.band_low is None or c.band_high is None or not 0 < c.band_low < c.band_high
    ):
        raise _fail(path, i, f"a {c.test} claim needs 0 < band_low < band_high")
    return c


def _raw_claims(p: Path) -> pd.DataFrame:
    df = _read(p, CLAIM_COLUMNS)
    _choice(df, p, "document", DOCUMENTS)
    _choice(df, p, "scope", SCOPES)
    _choice(df, p, "test", TESTS)
    _choice(df, p, "relation", RELATIONS)
    _choice(df, p, "a_style", STYLES)
    _choice(df, p, "b_style", STYLES)
    _pages(df, p)
    dup = df["claim_id"].duplicated()
    if dup.any():
        i = int(dup.to_numpy().nonzero()[0][0])
        raise _fail(p, i, f"duplicate claim_id {df['claim_id'].iloc[i]!r}")
    for i, r in enumerate(df.to_dict("records")):
        _claim(p, i, r)
    return df.loc[:, list(CLAIM_COLUMNS)].copy()


def load_claims(path: str | Path | None = None) -> pd.DataFrame:
    """The claims CSV as a DataFrame (one row per testable comparison), validated."""
    p = Path(path) if path is not None else CLAIMS_CSV
    out = _raw_claims(p)
    for col in ("published_ratio", "band_low", "band_high"):
        out[col] = pd.to_numeric(out[col].replace("", None), errors="raise").astype("Float64")
    for col in ("from_users", "to_users"):
        out[col] = pd.to_numeric(out[col].replace("", None), errors="raise").astype("Int64")
    return out


def claims(path: str | Path | None = None, scope: str | Sequence[str] | None = None) -> list[Claim]:
    """The claims as typed :class:`Claim` objects, optionally only those of ``scope``."""
    p = Path(path) if path is not None else CLAIMS_CSV
    df = _raw_claims(p)
    out = [_claim(p, i, r) for i, r in enumerate(df.to_dict("records"))]
    if scope is not None:
        wanted = (scope,) if isinstance(scope, str) else tuple(scope)
        out = [c for c in out if c.scope in wanted]
    return out


def published_cells() -> pd.DataFrame:
    """The performance tables in the shape of :func:`ipclab.stats.describe_cells`'s input:
    ``style, users, rps, mean_ms, total_requests`` (rps = total / duration, derived)."""
    perf = load_performance()
    return pd.DataFrame(
        {
            "style": perf["style"],
            "users": perf["users"].astype(int),
            "rps": perf["total_requests"].astype(float) / perf["duration_s"].astype(float),
            "mean_ms": perf["mean_rt_s"].astype(float) * 1000.0,
            "total_requests": perf["total_requests"].astype(int),
        }
    )
