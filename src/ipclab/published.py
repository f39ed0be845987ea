"""Reading published numbers and claims from ``data/published/`` (described in its README).

Each study keeps its own CSV files there and its own loaders in its folder; this module
holds what they share, public for a study kept outside the repository too: validated CSV
reading (:func:`read_table`, :func:`check_choice`, :func:`parse_numbers`; a
:class:`PublishedDataError` from :func:`row_error` names the file, the row and the problem),
the claims format (:class:`Claim`, one row per testable comparison, with a machine-readable
test spec; :func:`claims` reads a claims CSV, :func:`claim` declares one in code with the
CSV's defaults for every field not given).

A claim's ``document`` is the ``thesis`` or the ``paper`` it is quoted from, or
``hypothesis``: a study's own statement, from no publication (no page; its quote is the
hypothesis as the study states it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ipclab.paths import PUBLISHED_DIR

DATA_DIR = PUBLISHED_DIR

DOCUMENTS = ("thesis", "paper", "hypothesis")
HYPOTHESIS = "hypothesis"  # a study's own claim, not a published one
SCOPES = ("performance", "availability", "complexity", "serialisation")
TESTS = ("direction", "ratio", "equal", "differ", "interaction", "compare", "value")
# a value claim's stated unit -> its metric's unit (the metric name's suffix) -> the factor
UNIT_FACTORS = {("min", "s"): 60.0, ("s", "s"): 1.0, ("ms", "ms"): 1.0, ("s", "ms"): 1000.0}
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
RELATIONS = (">", "<", "=", "!=")

# a printed page or range: arabic, or the roman numbers of a front matter (an abstract on p. v)
_PAGE = re.compile(r"^(\d+|[ivxlc]+)(-(\d+|[ivxlc]+))?$")


class PublishedDataError(ValueError):
    """A published-data CSV is missing, malformed or inconsistent."""


def read_table(path: Path, columns: Sequence[str]) -> pd.DataFrame:
    """A published-data CSV, every cell a string (empty ones ""), with ``columns`` at least
    and one row at least; else a :class:`PublishedDataError` naming the file."""
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


def row_error(path: Path, i: int, msg: str) -> PublishedDataError:
    """The error of data row ``i`` (0-based) of ``path``, naming its line in the file."""
    # i is the 0-based data row; +2 gives the line number in the file (header is line 1)
    return PublishedDataError(f"{path}, line {i + 2}: {msg}")


def parse_numbers(
    df: pd.DataFrame,
    path: Path,
    col: str,
    kind: type,
    *,
    required: bool = True,
    positive: bool = False,
) -> pd.Series:
    """Column ``col`` of ``df`` as numbers of ``kind`` (int: Int64, float: Float64), empty
    cells None unless ``required``; a bad cell raises :func:`row_error`."""
    out = []
    for i, raw in enumerate(df[col]):
        s = raw.strip()
        if s == "":
            if required:
                raise row_error(path, i, f"{col} is empty")
            out.append(None)
            continue
        try:
            v = kind(s)
        except ValueError:
            raise row_error(path, i, f"{col}={raw!r} is not {kind.__name__}") from None
        if positive and v <= 0:
            raise row_error(path, i, f"{col}={raw!r} must be positive")
        out.append(v)
    dtype = "Int64" if kind is int else "Float64"
    return pd.Series(out, index=df.index, dtype=dtype)


def check_choice(
    df: pd.DataFrame, path: Path, col: str, allowed: Sequence[str], *, required: bool = True
) -> None:
    """Every cell of ``col`` is one of ``allowed`` (or empty, unless ``required``)."""
    for i, v in enumerate(df[col]):
        if v == "" and not required:
            continue
        if v not in allowed:
            raise row_error(path, i, f"{col}={v!r} not one of {', '.join(allowed)}")


def _pages(df: pd.DataFrame, path: Path) -> None:
    for i, (v, doc) in enumerate(zip(df["page"].astype(str), df["document"], strict=True)):
        if doc == HYPOTHESIS:
            if v:
                raise row_error(path, i, f"a hypothesis has no page (page={v!r})")
            continue
        if not _PAGE.match(v):
            raise row_error(
                path,
                i,
                f"page={v!r} is not a page (35, or v in a front matter) or a range like 35-36",
            )


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
      may be several loads, meaning the metric averaged over them. A "load" is the
      study's varied factor: users, rows per table or an added delay in ms (0 included).
    * ``ratio``: as direction, and the ratio a/b lies in [band_low, band_high].
    * ``equal`` / ``differ``: the ratio a/b lies inside / outside [band_low, band_high].
    * ``interaction``: growth of the metric from ``from_users`` to ``to_users`` for a_style
      divided by the same growth for b_style, compared with 1 by ``relation``.
    * ``compare``: a deterministic measurement (code size) of a_style vs b_style.
    * ``value``: metric(a_style @ a_users) equals the number the sentence states
      (``published_value`` in ``published_unit``: :attr:`published_number`), within the
      claim's band (its own, from the number's rounding, or the standard equivalence band);
      no b side.

    ``b_metric`` (optional column): the b side reads this metric instead of ``metric``, so one
    cell's two measures can be compared (e.g. a share of extremes against the same share of
    all other requests).
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
    # a word of the sentence that sets a size as well as a direction (docs/statistics.md):
    # "slight" (the difference is small) or "considerable" (it is large); "" for none
    magnitude: str = ""
    # the b side's metric when it is not ``metric`` (e.g. the share of extremes that overlap a
    # major GC against the share of all other requests, in the same cells); "" for the same
    b_metric: str = ""

    @property
    def source(self) -> str:
        if self.document == HYPOTHESIS:
            return "the study's own hypothesis (no publication)"
        return f"{self.document} §{self.section}, p. {self.page}"

    @property
    def published_number(self) -> float | None:
        """A ``value`` claim's stated number in its metric's unit (``"7"`` ``"min"`` for
        ``mttf_s``: 420.0); None for other kinds or without a number."""
        if self.test != "value":
            return None
        found = _NUMBER.search(self.published_value)
        factor = UNIT_FACTORS.get((self.published_unit, metric_unit(self.metric)))
        return None if found is None or factor is None else float(found.group()) * factor

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
        if self.test == "value":
            return (
                f"{self.metric}: {side(self.a_style, self.a_users)} ~= "
                f"{self.published_value} {self.published_unit}"
            )
        if self.test in ("equal", "differ"):
            rel = "~=" if self.test == "equal" else "!="
            return (
                f"{self.metric}: {side(self.a_style, self.a_users)} {rel} "
                f"{side(self.b_style, self.b_users)}"
            )
        b_side = side(self.b_style, self.b_users)
        if self.b_metric:
            return (
                f"{self.metric} of {side(self.a_style, self.a_users)} {self.relation} "
                f"{self.b_metric} of {b_side}"
            )
        return f"{self.metric}: {side(self.a_style, self.a_users)} {self.relation} {b_side}"


def metric_unit(metric: str) -> str:
    """A metric's unit from its name's suffix (``mttf_s``: s, ``mean_ms``: ms; else "")."""
    return next((u for u in ("ms", "s") if metric.endswith(f"_{u}")), "")


def _users(path: Path, i: int, col: str, raw: str) -> tuple[int, ...]:
    if raw.strip() == "":
        return ()
    try:
        vals = tuple(int(x) for x in raw.split(";"))
    except ValueError:
        raise row_error(path, i, f"{col}={raw!r} is not a load or loads separated by ';'") from None
    if any(v < 0 for v in vals):  # 0 is a load too, e.g. "no added delay"
        raise row_error(path, i, f"{col}={raw!r} must not be negative")
    return vals


def _opt_float(path: Path, i: int, col: str, raw: str) -> float | None:
    if raw.strip() == "":
        return None
    try:
        return float(raw)
    except ValueError:
        raise row_error(path, i, f"{col}={raw!r} is not a number") from None


def _opt_int(path: Path, i: int, col: str, raw: str) -> int | None:
    if raw.strip() == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise row_error(path, i, f"{col}={raw!r} is not an integer") from None


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
        magnitude=r.get("magnitude", ""),
        b_metric=r.get("b_metric", ""),
    )
    _check_claim(path, i, c)
    return c


def _check_claim(path: Path, i: int, c: Claim) -> None:
    """A row's claim is whole and its test, relation, cells and band fit together."""
    if not c.claim_id.startswith(c.statement_id):
        raise row_error(path, i, f"claim_id {c.claim_id!r} does not start with {c.statement_id!r}")
    if not c.quote.strip():
        raise row_error(path, i, "quote is empty")
    if not c.metric:
        raise row_error(path, i, "metric is empty")
    if c.test != "value" and not c.b_style:
        raise row_error(path, i, f"a {c.test} claim needs b_style")
    if c.test == "interaction":
        if c.from_users is None or c.to_users is None:
            raise row_error(path, i, "an interaction needs from_users and to_users")
        if c.relation not in ("<", ">"):
            raise row_error(path, i, "an interaction's relation must be < or >")
    elif c.test == "value":
        if not c.a_users or c.b_style or c.b_users or c.relation != "=":
            raise row_error(path, i, "a value claim names a_style and a_users only, relation '='")
        if c.published_number is None:
            raise row_error(
                path, i, f"a value claim needs a number in published_value and a unit of "
                f"{c.metric!r} in published_unit (one of {sorted({u for u, _ in UNIT_FACTORS})})",
            )  # fmt: skip
    elif c.test == "compare":
        if c.relation not in ("<", ">"):
            raise row_error(path, i, "a compare claim's relation must be < or >")
    else:
        if (
            c.scope != "complexity"
            and c.metric != "outage_failure_fraction"
            and (not c.a_users or not c.b_users)
        ):
            raise row_error(path, i, f"a {c.test} claim needs a_users and b_users")
        allowed = {
            "direction": ("<", ">"),
            "ratio": ("<", ">"),
            "equal": ("=",),
            "differ": ("!=",),
        }[c.test]
        if c.relation not in allowed:
            raise row_error(path, i, f"relation {c.relation!r} does not fit test {c.test!r}")
    given = c.band_low is not None or c.band_high is not None
    if given and c.test not in ("ratio", "equal", "differ", "value"):
        raise row_error(path, i, f"a {c.test} claim has no band")
    if (c.test == "ratio" or given) and (
        c.band_low is None or c.band_high is None or not 0 < c.band_low < c.band_high
    ):
        raise row_error(path, i, f"a {c.test} claim's band needs 0 < band_low < band_high")
    if given and c.magnitude:
        raise row_error(path, i, f"magnitude {c.magnitude!r} has its standard band "
                    "(docs/statistics.md section 4): leave band_low/band_high empty")  # fmt: skip
    if given and not c.published_value.strip():
        raise row_error(
            path, i, "a claim's own band needs the number its sentence states "
            "(published_value); without one, leave the band empty (standard band)",
        )  # fmt: skip
    approx = approximate_number(c.quote, c.published_value) if given else None
    if approx:
        raise row_error(
            path, i, f"{approx!r} is an approximate number: 'about N' takes the standard "
            "equivalence band (docs/statistics.md section 4); leave band_low/band_high empty",
        )  # fmt: skip
    if c.magnitude and c.test not in ("direction", "differ"):
        raise row_error(path, i, f"magnitude {c.magnitude!r} applies to direction or differ only")
    if c.magnitude == "slight" and c.test != "direction":
        raise row_error(path, i, "'slight' is a size of a direction (test = direction)")


#: the words that give a number as approximate ("about 20 seconds"; docs/statistics.md
#: section 4: such a number takes the standard equivalence band, never an own one)
APPROXIMATE = ("about", "approximately", "around", "roughly", "nearly", "almost")
_APPROXIMATE = re.compile(
    r"\b(?:" + "|".join(APPROXIMATE) + r")\s+(?P<n>\d+(?:[.,]\d+)?)", re.IGNORECASE
)


def approximate_number(quote: str, published_value: str) -> str | None:
    """The words of ``quote`` that give one of ``published_value``'s numbers as approximate
    ("about 20"), or None."""
    numbers = {n.replace(",", "") for n in _NUMBER.findall(published_value.replace(",", ""))}
    for m in _APPROXIMATE.finditer(quote):
        if m.group("n").replace(",", "") in numbers:
            return m.group(0)
    return None


MAGNITUDES = ("", "slight", "considerable")


def _raw_claims(p: Path, styles: Sequence[str]) -> pd.DataFrame:
    df = read_table(p, CLAIM_COLUMNS)
    for optional in ("magnitude", "b_metric"):  # optional columns
        if optional not in df.columns:
            df[optional] = ""
    check_choice(df, p, "magnitude", MAGNITUDES)
    check_choice(df, p, "document", DOCUMENTS)
    check_choice(df, p, "scope", SCOPES)
    check_choice(df, p, "test", TESTS)
    check_choice(df, p, "relation", RELATIONS)
    check_choice(df, p, "a_style", styles)
    check_choice(df, p, "b_style", styles, required=False)  # a value claim has none
    _pages(df, p)
    dup = df["claim_id"].duplicated()
    if dup.any():
        i = int(dup.to_numpy().nonzero()[0][0])
        raise row_error(p, i, f"duplicate claim_id {df['claim_id'].iloc[i]!r}")
    for i, r in enumerate(df.to_dict("records")):
        _claim(p, i, r)
    return df.loc[:, [*CLAIM_COLUMNS, "magnitude", "b_metric"]].copy()


def load_claims(path: str | Path, styles: Sequence[str]) -> pd.DataFrame:
    """A claims CSV as a DataFrame (one row per testable comparison), validated; ``styles``:
    the style names its comparisons may name."""
    p = Path(path)
    out = _raw_claims(p, styles)
    for col in ("published_ratio", "band_low", "band_high"):
        out[col] = pd.to_numeric(out[col].replace("", None), errors="raise").astype("Float64")
    for col in ("from_users", "to_users"):
        out[col] = pd.to_numeric(out[col].replace("", None), errors="raise").astype("Int64")
    return out


def claims(
    path: str | Path, styles: Sequence[str], scope: str | Sequence[str] | None = None
) -> list[Claim]:
    """A claims CSV as typed :class:`Claim` objects, optionally only those of ``scope``."""
    p = Path(path)
    df = _raw_claims(p, styles)
    out = [_claim(p, i, r) for i, r in enumerate(df.to_dict("records"))]
    if scope is not None:
        wanted = (scope,) if isinstance(scope, str) else tuple(scope)
        out = [c for c in out if c.scope in wanted]
    return out


def claim(styles: Sequence[str] = (), **fields: object) -> Claim:
    """One claim declared in code, checked as a claims CSV's row is: every field not given
    takes the CSV's default (an empty cell), loads may be given as tuples, e.g.
    ``claim(claim_id="H1", statement_id="H1", document="hypothesis", quote=...,
    scope="performance", metric="mean_ms", test="direction", relation="<", a_style="h2c",
    a_users=(10,), b_style="rest", b_users=(10,))``; ``styles``: the styles it may name
    (all, when empty)."""
    known = (*CLAIM_COLUMNS, "magnitude", "b_metric")
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise TypeError(f"claim(): unknown field(s) {', '.join(unknown)}")

    def cell(v: object) -> str:
        if v is None:
            return ""
        if isinstance(v, tuple | list):
            return ";".join(map(str, v))
        return str(v)

    row = {col: cell(fields.get(col)) for col in known}
    where = Path(f"<claim {row['claim_id'] or '?'}>")
    frame = pd.DataFrame([row])
    for col, allowed in (("document", DOCUMENTS), ("scope", SCOPES), ("test", TESTS),
                         ("relation", RELATIONS), ("magnitude", MAGNITUDES)):  # fmt: skip
        check_choice(frame, where, col, allowed, required=col != "magnitude")
    if styles:
        check_choice(frame, where, "a_style", styles)
        check_choice(frame, where, "b_style", styles, required=False)
    _pages(frame, where)
    return _claim(where, 0, row)
