"""Johansson 2017's published numbers: exactly as printed, the thesis's arithmetic errors
flagged (never fixed), every claim of chapters 7 and 8 a valid claim row."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ipclab.claims import published_consistent
from ipclab.studies.johansson import published
from tests import seeds
from tests.seeds import seed_text
from tests.test_published import _quote_in, _tokens

PRINTED = {  # thesis sections 7.1-7.3: (test, style) -> (min, max, mean) in ms
    (1, "rest"): (58.53, 151.08, 78.94),
    (1, "graphql"): (119.86, 177.72, 142.92),
    (2, "rest"): (63.04, 260.39, 100.35),
    (2, "graphql"): (203.00, 840.56, 256.80),
    (3, "rest"): (65.25, 185.91, 84.0),
    (3, "graphql"): (301.14, 759.84, 357.89),
}


def _row(res, test: int, style: str, quantity: str):  # type: ignore[no-untyped-def]
    hit = res[(res["test"] == test) & (res["style"] == style) & (res["quantity"] == quantity)]
    assert len(hit) == 1, (test, style, quantity)
    return hit.iloc[0]


def test_every_number_as_printed() -> None:
    cells = published.published_cells().set_index(["test", "style"])
    for key, (lo, hi, mean) in PRINTED.items():
        assert tuple(cells.loc[key, ["min_ms", "max_ms", "mean_ms"]]) == (lo, hi, mean)
    assert dict(zip(cells.index.get_level_values("test"), cells["rows"], strict=True)) == {
        1: 5, 2: 25, 3: 50,
    }  # fmt: skip
    res = published.load_results()
    assert _row(res, 2, "graphql", "min_ms")["printed"] == "203.00"  # trailing zeros kept
    assert _row(res, 3, "rest", "mean_ms")["printed"] == "84"
    setup = res.set_index("quantity")
    assert setup.loc["requests", "value"] == 100 and setup.loc["pause_s", "value"] == 1
    assert set(res["page"]) == {"27-28", "29-30", "30-32"}
    assert set(res["section"]) == {"7.1", "7.2", "7.3"}


def test_errors_are_flagged_not_fixed() -> None:
    res = published.load_results()
    # 81.05% is (G - R) / R; 256% and 426% are G / R under the same word "slower"
    assert _row(res, 1, "graphql", "percent_slower")["value"] == 81.05
    assert _row(res, 1, "graphql", "percent_slower")["flags"] == ()
    assert "inconsistent" in _row(res, 2, "graphql", "percent_slower")["flags"]
    assert set(_row(res, 3, "graphql", "percent_slower")["flags"]) == {"inconsistent", "coarse"}
    pp = _row(res, 3, "graphql", "pp_increase")
    assert pp["value"] == 179 and "inconsistent" in pp["flags"] and "170" in pp["note"]
    assert _row(res, 3, "rest", "mean_ms")["flags"] == ("coarse",)
    omitted = res[res["flags"].map(lambda f: "unit_omitted" in f)]
    assert sorted(omitted["printed"]) == ["142.92", "177.72", "759.84"]
    assert (omitted["unit"] == "").all()
    missing = res[res["flags"].map(lambda f: "missing" in f)]
    assert list(missing["quantity"]) == ["rows"] and missing["value"].isna().all()


def test_derived_ratios_and_the_thesis_arithmetic() -> None:
    r = published.published_ratios().set_index("test")
    assert r["ratio"].round(2).tolist() == [1.81, 2.56, 4.26]
    assert r.loc[1, "slower_percent"] == pytest.approx(81.05, abs=0.005)  # (G - R) / R
    assert round(r.loc[2, "g_over_r_percent"]) == 256  # G / R
    assert round(r.loc[3, "g_over_r_percent"]) == 426
    assert round(r.loc[2, "slower_percent"], 1) == 155.9  # what test 1's definition gives
    assert round(r.loc[3, "g_over_r_percent"] - r.loc[2, "g_over_r_percent"], 1) == 170.2
    assert 426 - 256 == 170 != 179


def test_claims_cover_chapters_7_and_8() -> None:
    cl = published.claims()
    assert len({c.claim_id for c in cl}) == len(cl)
    statements = {c.statement_id for c in cl}
    assert {f"J{i:02d}" for i in range(1, 17)} <= statements
    assert {c.section for c in cl} == {"5.2", "7.1", "7.2", "7.3", "8"}
    perf = published.claims(scope="performance")
    assert {c.a_style for c in perf} | {c.b_style for c in perf} == {"rest", "graphql"}
    sizes = {u for c in perf for u in (*c.a_users, *c.b_users, c.from_users, c.to_users) if u}
    assert sizes == {5, 25, 50}
    ser = published.claims(scope="serialisation")
    assert {c.metric for c in ser} == {"bytes", "encode_us", "decode_us", "roundtrip_us"}
    # no Thrift-vs-Protocol Buffers time order: the thesis's sources disagree
    timed = [c for c in ser if c.metric != "bytes"]
    assert not any({c.a_style, c.b_style} == {"thrift", "protobuf"} for c in timed)


def test_claims_published_ratios_match_the_printed_numbers() -> None:
    cells = published.published_cells().set_index(["rows", "style"])
    mean = cells["mean_ms"]
    for c in published.claims(scope="performance"):
        if c.published_ratio is None or c.metric not in ("mean_ms", "min_ms", "max_ms"):
            continue
        m = cells[c.metric]
        if c.test == "interaction":
            f, t = c.from_users, c.to_users
            want = (m[(t, c.a_style)] / m[(f, c.a_style)]) / (m[(t, c.b_style)] / m[(f, c.b_style)])
        else:
            a = sum(m[(u, c.a_style)] for u in c.a_users) / len(c.a_users)
            b = sum(m[(u, c.b_style)] for u in c.b_users) / len(c.b_users)
            want = a / b
        assert c.published_ratio == pytest.approx(want, abs=6e-5), c.claim_id
    j03 = next(c for c in published.claims() if c.claim_id == "J03a")
    assert j03.band_low < mean[(5, "graphql")] / mean[(5, "rest")] < j03.band_high
    # the thesis's own numbers: its maxima at test 1 are not "considerably" apart
    j02d = next(c for c in published.claims() if c.claim_id == "J02d")
    assert published_consistent(j02d) is False
    j11b = next(c for c in published.claims() if c.claim_id == "J11b")
    assert (j11b.published_value, j11b.table_value) == ("179", "170.2")


def test_own_bands_only_where_a_number_is_printed() -> None:
    cl = published.claims()
    own = {c.claim_id: c for c in cl if c.band_low is not None}
    assert set(own) == {"J03a", "J06a", "J11a"}
    for c in own.values():  # the printed percentage, in the sentence
        assert c.published_value and c.published_value in c.quote, c.claim_id
    sized = {c.claim_id: (c.test, c.magnitude) for c in cl if c.magnitude}
    assert sized == {
        **dict.fromkeys(("J02c", "J02d", "J08c", "J08d"), ("direction", "considerable")),
        **dict.fromkeys(("S01c", "S01d", "S01i", "S01j"), ("direction", "considerable")),
        **dict.fromkeys(("S01e", "S01f"), ("direction", "slight")),
    }  # fmt: skip
    j09 = next(c for c in cl if c.claim_id == "J09a")
    assert j09.test == "equal" and j09.band_low is None and j09.band_high is None


def test_j15_recommendation_is_not_a_performance_test() -> None:
    """'GraphQL can ... where few data resources are fetched at a time be a good idea to use'
    argues for GraphQL's flexibility: no row tests it; the sentence stays traceable in J15a."""
    j15 = [c for c in published.claims() if c.statement_id == "J15"]
    assert [c.claim_id for c in j15] == ["J15a"]
    assert "be a good idea to use" in j15[0].quote and "J15b" in j15[0].note


def test_every_quote_and_number_is_in_the_thesis() -> None:
    text = seed_text(seeds.JOHANSSON_THESIS)
    tokens = _tokens(text)
    for c in published.claims():
        assert _quote_in(c.quote, tokens), c.claim_id
    res = published.load_results()
    for q in res["quote"]:
        assert q in text
    # every number printed in sections 7.1-7.3 has its row
    body = text[text.index("7.1 Test 1\n") : text.index("Chapter 8")]
    numbers = set(re.findall(r"\d+(?:\.\d+)?", body)) - {"1", "2", "3", "7"}
    numbers -= {f"7.{i}" for i in range(1, 7)}  # section and figure numbers
    assert numbers == set(res["printed"].str.extract(r"([\d.]+)")[0].dropna())


# --------------------------------------------------------------------------- strict loading


def _copy(tmp_path: Path, src: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    return dst


def test_bad_rows_name_the_line(tmp_path: Path) -> None:
    p = _copy(tmp_path, published.RESULTS_CSV)
    text = p.read_text()
    p.write_text(text.replace(",58.53,58.53,", ",58.53,58.35,", 1))
    with pytest.raises(published.PublishedDataError, match=r"line 5: value '58.35' is not"):
        published.load_results(p)
    p.write_text(text.replace(",REST,rest,min_ms,58.53", ",REST,graphql,min_ms,58.53", 1))
    with pytest.raises(published.PublishedDataError, match="does not map"):
        published.load_results(p)
    p.write_text(text.replace("unit_omitted", "typo", 1))
    with pytest.raises(published.PublishedDataError, match="flags"):
        published.load_results(p)
    p.write_text(text.replace(",rows per table,missing,", ",rows per table,,", 1))
    with pytest.raises(published.PublishedDataError, match="empty but flags"):
        published.load_results(p)


def test_claims_validation(tmp_path: Path) -> None:
    p = _copy(tmp_path, published.CLAIMS_CSV)
    text = p.read_text()
    p.write_text(text.replace("J02b,J02,", "J02a,J02,", 1))
    with pytest.raises(published.PublishedDataError, match="duplicate claim_id 'J02a'"):
        published.load_claims(p)
    p.write_text(text.replace(",graphql,50,rest,50,", ",soap,50,rest,50,", 1))
    with pytest.raises(published.PublishedDataError, match="a_style='soap'"):
        published.claims(p)
