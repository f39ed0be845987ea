"""The published CSVs hold the printed numbers, flag the documents' errors, and load strictly."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ipclab.studies.shafabakhsh import published
from tests import seeds
from tests.seeds import seed_text

REQ = "requests per 180 s"


def perf_value(style: str, users: int, col: str) -> float:
    p = published.load_performance()
    row = p[(p["style"] == style) & (p["users"] == users)]
    assert len(row) == 1
    return float(row[col].iloc[0])


def test_performance_tables_as_printed() -> None:
    p = published.load_performance()
    assert len(p) == 9 and set(p["users"]) == {50, 100, 200}
    printed = {  # Tables 5.1-5.3: mean RT (s), total requests in 180 s
        ("rest", 50): (0.23, 4261),
        ("grpc", 50): (0.22, 4304),
        ("amqp", 50): (0.27, 4157),
        ("rest", 100): (3.5, 4373),
        ("grpc", 100): (3.3, 4453),
        ("amqp", 100): (3.5, 4398),
        ("rest", 200): (7.8, 4334),
        ("grpc", 200): (7.2, 4348),
        ("amqp", 200): (6.4, 4480),
    }
    for (s, u), (rt, tot) in printed.items():
        assert perf_value(s, u, "mean_rt_s") == rt
        assert perf_value(s, u, "total_requests") == tot
    assert (p["duration_s"] == 180).all()
    assert dict(zip(p["table"], p["page"], strict=False)) == {"5.1": 35, "5.2": 35, "5.3": 36}
    assert p.loc[(p["style"] == "rest") & (p["users"] == 200), "method"].item() == "Rest API"


def test_availability_table_as_printed_and_formula_mismatch_flagged() -> None:
    a = published.load_availability().set_index("style")
    assert a.loc["amqp", ["mttf_s", "mttr_s", "availability"]].tolist() == [430, 29, 0.95]
    assert a.loc["grpc", ["mttf_s", "mttr_s", "availability"]].tolist() == [290, 21, 0.93]
    assert a.loc["rest", ["mttf_s", "mttr_s", "availability"]].tolist() == [275, 19, 0.93]
    assert a["approximate"].all() and (a["page"] == 38).all() and (a["users"] == 200).all()
    computed = a["mttf_s"] / (a["mttf_s"] + a["mttr_s"])
    assert computed["amqp"] == pytest.approx(430 / 459) and round(computed["amqp"], 3) == 0.937
    assert round(computed["amqp"], 2) != a.loc["amqp", "availability"]  # printed 0.95
    assert computed["rest"] > computed["grpc"]  # the formula ranks REST above gRPC
    assert "430/459 = 0.937" in a.loc["amqp", "note"]


def test_104_versus_147_is_flagged_not_fixed() -> None:
    c = {x.claim_id: x for x in published.claims()}
    t = c["T01b"]  # thesis text
    assert "104 requests more than RabbitMQ" in t.quote
    assert t.published_value == "104" and t.table_value == "147"
    assert "INCONSISTENT" in t.note
    assert c["P01b"].published_value == "147"  # the paper agrees with the table
    assert (
        perf_value("grpc", 50, "total_requests") - perf_value("amqp", 50, "total_requests") == 147
    )
    assert (
        perf_value("rest", 50, "total_requests") - perf_value("amqp", 50, "total_requests") == 104
    )
    note = published.load_performance().query("style == 'grpc' and users == 50")["note"].item()
    assert "104" in note and "147" in note


def test_saturation_flagged_in_the_performance_notes() -> None:
    p = published.load_performance()
    assert p["note"].str.contains("saturated near 24 req/s").all()
    rps = p["total_requests"] / p["duration_s"]
    assert rps.between(23.0, 25.0).all()


def test_printed_differences_match_the_tables() -> None:
    """Every printed request difference equals the table's, except the flagged 104."""
    checked = 0
    for c in published.claims():
        if c.published_unit != REQ or not c.table_value or len(c.a_users) != 1:
            continue
        a = perf_value(c.a_style, c.a_users[0], "total_requests")
        b = perf_value(c.b_style, c.b_users[0], "total_requests")
        assert int(c.table_value) == a - b, c.claim_id
        if c.published_value:
            assert (int(c.published_value) == a - b) or "INCONSISTENT" in c.note, c.claim_id
        checked += 1
    assert checked > 0, "the filter left no printed difference to check"


def test_published_ratios_match_the_tables() -> None:
    col = {"rps": "total_requests", "mean_ms": "mean_rt_s"}
    checked = 0
    for c in published.claims():
        if c.metric not in col or c.published_ratio is None:
            continue
        v = col[c.metric]
        if c.test == "interaction":
            assert c.from_users is not None and c.to_users is not None
            ga = perf_value(c.a_style, c.to_users, v) / perf_value(c.a_style, c.from_users, v)
            gb = perf_value(c.b_style, c.to_users, v) / perf_value(c.b_style, c.from_users, v)
            expected = ga / gb
        else:
            a = sum(perf_value(c.a_style, u, v) for u in c.a_users) / len(c.a_users)
            b = sum(perf_value(c.b_style, u, v) for u in c.b_users) / len(c.b_users)
            expected = a / b
        assert c.published_ratio == pytest.approx(expected, abs=1e-4), c.claim_id
        checked += 1
    assert checked > 50


def test_printed_percentages() -> None:
    c = {x.claim_id: x for x in published.claims()}
    assert c["T11a"].published_value == "22" and c["T11a"].band_low == 1.215
    assert perf_value("rest", 200, "mean_rt_s") / perf_value("amqp", 200, "mean_rt_s") == (
        pytest.approx(1.21875)
    )
    assert c["T11b"].published_value == "13" and "12.5%" in c["T11b"].note


def test_claims_cover_the_chapters() -> None:
    cl = published.claims()
    ids = [c.claim_id for c in cl]
    assert len(ids) == len(set(ids))
    perf = published.claims(scope="performance")
    assert {c.document for c in perf} == {"thesis", "paper"}
    sections = {(c.document, c.section.split(" ")[0]) for c in cl}
    for needed in (
        ("thesis", "5.1.1"),
        ("thesis", "5.1.2"),
        ("thesis", "5.2.1"),
        ("thesis", "5.2.2"),
        ("paper", "4.1"),
        ("paper", "4.2"),
    ):
        assert needed in sections
    for users in (50, 100, 200):
        assert any(users in c.a_users for c in perf if c.document == "thesis")
        assert any(users in c.a_users for c in perf if c.document == "paper")
    for c in cl:
        first = int(c.page.split("-")[0])
        assert (34 <= first <= 45) if c.document == "thesis" else (55 <= first <= 63)
    assert {c.scope for c in published.claims(scope=("availability",))} == {"availability"}


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z]+|\d+", text.lower().replace("’", "'"))


def _quote_in(quote: str, tokens: list[str], window: int = 40) -> bool:
    """The quote's words in order, allowing the other column's words in between (the paper
    is two-column text interleaved line by line) and words split by hyphenation."""

    def match(w: str, j: int) -> int | None:
        for i in range(j, min(len(tokens), j + window)):
            t = tokens[i]
            if t == w:
                return i + 1
            if 2 <= len(t) < len(w) and w.startswith(t):
                for k in range(i + 1, min(len(tokens), i + 1 + window)):
                    if tokens[k] == w[len(t) :]:
                        return k + 1
        return None

    q = _tokens(quote)
    for s in (i for i, t in enumerate(tokens) if t == q[0]):
        j: int | None = s + 1
        for w in q[1:]:
            assert j is not None
            j = match(w, j)
            if j is None:
                break
        else:
            if j is not None and j - s <= 3 * len(q) + 40:
                return True
    return False


def test_every_quote_is_in_its_document() -> None:
    thesis, paper = seed_text(seeds.SHAFABAKHSH_THESIS), seed_text(seeds.SHAFABAKHSH_PAPER)
    texts = {"thesis": _tokens(thesis), "paper": _tokens(paper)}
    for c in published.claims():
        assert _quote_in(c.quote, texts[c.document]), c.claim_id
    assert not _quote_in(
        "gRPC processed 104 requests more than RabbitMQ in the third case", texts["paper"]
    )


# --------------------------------------------------------------------------- strict loading


def _copy(tmp_path: Path, src: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    return dst


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(published.PublishedDataError, match="not found"):
        published.load_performance(tmp_path / "nope.csv")


def test_missing_column(tmp_path: Path) -> None:
    p = _copy(tmp_path, published.PERFORMANCE_CSV)
    p.write_text(p.read_text().replace("mean_rt_s", "mean_rt", 1))
    with pytest.raises(published.PublishedDataError, match="missing column.*mean_rt_s"):
        published.load_performance(p)


def test_bad_number_names_the_line(tmp_path: Path) -> None:
    p = _copy(tmp_path, published.PERFORMANCE_CSV)
    p.write_text(p.read_text().replace(",4304,", ",43o4,", 1))
    with pytest.raises(published.PublishedDataError, match=r"line 3: total_requests='43o4'"):
        published.load_performance(p)


def test_unknown_style_and_method_mismatch(tmp_path: Path) -> None:
    p = _copy(tmp_path, published.PERFORMANCE_CSV)
    p.write_text(p.read_text().replace("gRPC,grpc", "gRPC,rest", 1))
    with pytest.raises(published.PublishedDataError, match="does not map"):
        published.load_performance(p)
    p.write_text(p.read_text().replace("gRPC,rest", "gRPC,soap", 1))
    with pytest.raises(published.PublishedDataError, match="style='soap'"):
        published.load_performance(p)


def test_availability_above_one(tmp_path: Path) -> None:
    p = _copy(tmp_path, published.AVAILABILITY_CSV)
    p.write_text(p.read_text().replace(",0.95,", ",1.95,", 1))
    with pytest.raises(published.PublishedDataError, match="above 1"):
        published.load_availability(p)


def test_claims_validation(tmp_path: Path) -> None:
    p = _copy(tmp_path, published.CLAIMS_CSV)
    text = p.read_text()
    p.write_text(text.replace("T01b,T01,", "T01a,T01,", 1))
    with pytest.raises(published.PublishedDataError, match="duplicate claim_id 'T01a'"):
        published.load_claims(p)
    p.write_text(text.replace(",direction,>,grpc,50,", ",direction,=,grpc,50,", 1))
    with pytest.raises(published.PublishedDataError, match="does not fit test"):
        published.claims(p)
    p.write_text(text.replace(",direction,>,grpc,50,rest,50,", ",direction,>,grpc,5x,rest,50,", 1))
    with pytest.raises(published.PublishedDataError, match="a_users='5x'"):
        published.claims(p)


def test_published_cells_are_derived_rps() -> None:
    cells = published.published_cells().set_index(["style", "users"])
    assert cells.loc[("rest", 50), "rps"] == pytest.approx(4261 / 180)
    assert cells.loc[("amqp", 200), "mean_ms"] == pytest.approx(6400.0)
