"""Buono & Petrovic 2021's published numbers: exactly as printed, with the grid cell each
belongs to; the thesis's errors and the checks its printed examples fail flagged (never
fixed); every claim a valid claim row on a style of the grid."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, published_consistent
from ipclab.claims import test_key as family_key
from ipclab.studies.buono import analysis, published
from tests import seeds
from tests.seeds import seed_text
from tests.test_published import _quote_in, _tokens

# section, printed -> value, unit: the results the thesis prints (abstract and section 6.1)
PRINTED = {
    ("Abstract", "25.1%"): (25.1, "%"),
    ("Abstract", "72.28%"): (72.28, "%"),
    ("6.1", "less than 2ms"): (2, "ms"),
    ("6.1", "8.13%"): (8.13, "%"),
    ("6.1", "25.1%"): (25.1, "%"),
    ("6.1", "164.3ms"): (164.3, "ms"),
    ("6.1", "25.80%"): (25.80, "%"),
    ("6.1", "58.2%"): (58.2, "%"),
    ("6.1", "64.54%"): (64.54, "%"),
    ("6.1", "72.28%"): (72.28, "%"),
    ("6.1", "the value 0"): (0, ""),
    ("6.1", "400MB"): (400, "MB"),
    ("6.1", "43320KB"): (43320, "KB"),
}


def _normalise(text: str) -> str:
    """The seed as the quotes hold it: emphasis marks and superscript tags dropped,
    whitespace (line and page breaks, table tabs) as single spaces."""
    text = text.replace("*", "").replace("<sup>", "").replace("</sup>", "")
    return re.sub(r"\s+", " ", text).strip()


def _row(res, section: str, printed: str):  # type: ignore[no-untyped-def]
    hit = res[(res["section"] == section) & (res["printed"] == printed)]
    assert len(hit) == 1, (section, printed)
    return hit.iloc[0]


def test_every_result_as_printed() -> None:
    res = published.load_results()
    for (section, printed), (value, unit) in PRINTED.items():
        r = _row(res, section, printed)
        assert (r["value"], r["unit"]) == (value, unit), (section, printed)
    assert "25.80" in _row(res, "6.1", "25.80%")["quote"]  # the trailing zero kept
    for structure in published.STRUCTURES:
        t3 = res[(res["table"] == "3") & (res["structure"] == structure)]
        assert sorted(t3.loc[t3["quantity"] == "request_count", "value"]) == [1, 5, 50, 100]
    assert _row(res, "4.4", "Up to to 300 000")["value"] == 300_000
    assert _row(res, "4.4", "Up to 650")["value"] == 650
    named = res[res["quantity"] == "generation_count"]
    assert set(zip(named["structure"], named["value"], strict=True)) >= {
        ("flat", 5), ("flat", 100_000), ("flat", 300_000),
        ("nested", 5), ("nested", 325), ("nested", 650),
    }  # fmt: skip
    assert _row(res, "5.2", "100")["quantity"] == "requests_per_cell"
    assert _row(res, "5.2", "an initial pre-request")["value"] == 1
    assert _row(res, "4.6", "10M")["quantity"] == "gzip_max_input"
    assert (_row(res, "2.4.4", "33 bytes")["value"], _row(res, "2.4.3", "300")["value"]) == (
        33,
        300,
    )


def test_grid_coordinates_of_the_results() -> None:
    res = published.load_results()
    rt = _row(res, "6.1", "8.13%")
    assert (rt["method"], rt["count"], rt["gzip"], rt["cache"], rt["figure"]) == (
        "GET", 5, "off", "off", "27",
    )  # fmt: skip
    for section in ("Abstract", "6.1"):
        pt = _row(res, section, "25.1%")
        assert (pt["structure"], pt["method"], pt["count"], pt["gzip"], pt["cache"]) == (
            "nested", "POST", 650, "on", "off",
        )  # fmt: skip
        assert "inferred" in pt["flags"]  # the count is not printed
    gz = _row(res, "6.1", "58.2%")
    assert (gz["structure"], gz["count"], gz["gzip"], gz["figure"]) == ("flat", 5, "on", "29")
    blob = _row(res, "6.1", "43320KB")
    assert (blob["structure"], blob["count"], blob["format"]) == ("flat", 300_000, "protobuf")


def test_errors_are_flagged_not_fixed() -> None:
    res = published.load_results()
    assert "inconsistent" in _row(res, "Abstract", "25.1%")["flags"]  # 'response time'
    assert "inconsistent" not in _row(res, "6.1", "25.1%")["flags"]
    assert "miscited" in _row(res, "6.1", "25.1%")["flags"]  # 'section 5.2.1' for Fig. 28
    assert "inconsistent" in _row(res, "6.1", "25.80%")["flags"]  # the Fig. 29 exception
    assert set(_row(res, "6.1", "43320KB")["flags"]) == {"inferred", "inconsistent"}
    assert "typo" in _row(res, "4.4", "Up to to 300 000")["flags"]
    assert "bound" in _row(res, "6.1", "less than 2ms")["flags"]
    disagree = res[res["flags"].map(lambda f: "check_disagrees" in f)]
    assert sorted(zip(disagree["section"], disagree["printed"], strict=True)) == [
        ("6.1", "64.54%"), ("6.1", "72.28%"), ("Abstract", "72.28%"),
    ]  # fmt: skip
    assert (res["document"] == "thesis").all()


def test_the_printed_examples_as_bytes() -> None:
    e = published.element_sizes()
    assert (e["user_protobuf"], e["user_protobuf_element"]) == (153, 156)
    assert (e["user_json"], e["user_json_element"]) == (211, 212)
    assert (e["item1_protobuf"], e["item1_json"], e["item1_json_indented"]) == (74, 119, 140)
    assert (e["item2_protobuf"], e["item2_json"], e["item2_json_indented"]) == (75, 119, 140)
    assert published.leb128(300) == bytes.fromhex("ac 02")
    assert published.unleb128(bytes.fromhex("ac 02")) == 300
    with pytest.raises(ValueError, match="high bit"):
        published.unleb128(bytes.fromhex("ac"))


def test_printed_checks_and_the_flags_agree() -> None:
    checks = published.printed_checks()
    res = published.load_results()
    failing = set(checks.loc[~checks["agrees"], "check"])
    assert failing == {
        "nested worst case against the Fig. 23 items",
        "the abstract's 25.1% 'response time' against section 6.1's response time",
        "the flat worst case against the exception of Fig. 29",
    }
    for c in checks.itertuples():
        for section, printed in c.rows:
            flags = _row(res, section, printed)["flags"]
            assert (c.flag in flags) == (not c.agrees), (c.check, section, printed)
    by = checks.set_index("check")
    assert by.loc["flat worst case against the Fig. 21 user", "derived"] == pytest.approx(26.42)
    assert by.loc["43320KB against as many Fig. 21 users", "derived"] == pytest.approx(46_800)
    assert by.loc["nested worst case against the Fig. 23 items", "derived"] == pytest.approx(47.14)


def test_the_reported_cells() -> None:
    grid = published.load_grid()
    figures = set(grid["figure"])
    assert figures == {str(f) for f in range(27, 36)} | {str(f) for f in range(43, 48)}
    for fig, g in grid.groupby("figure"):
        if fig not in {"32", "33", "34", "35"}:
            assert set(g["format"]) == {"json", "protobuf"}, fig
    oom = grid[(grid["figure"] == "34")].iloc[0]
    assert (oom["format"], oom["count"], "killed" in oom["outcome"]) == ("json", 300_000, True)
    f28 = grid[grid["figure"] == "28"]
    assert set(f28["count"]) == {5, 325, 650} and set(f28["inferred"]) == {("count",)}
    assert set(grid.loc[grid["figure"] == "27", "cache"]) == {"on", "off"}


def test_claims_are_valid_rows_on_grid_styles() -> None:
    cl = published.claims()
    assert len(cl) == len({c.claim_id for c in cl}) == 53
    assert {c.statement_id for c in cl} == {f"B{i:02d}" for i in range(1, 18)}
    assert {c.metric for c in cl} <= set(published.METRICS)
    counts = {5, 325, 650, 100_000, 300_000}
    for c in cl:
        for s in (c.a_style, c.b_style):
            assert published.style(*vars(published.parse_style(s)).values()) == s
        assert set(c.a_users) | set(c.b_users) | {c.from_users, c.to_users} - {None} <= counts
        assert (c.scope == "serialisation") == (c.metric == "body_bytes"), c.claim_id
        a, b = published.parse_style(c.a_style), published.parse_style(c.b_style)
        differ = [k for k in vars(a) if getattr(a, k) != getattr(b, k)]
        assert len(differ) == 1, (c.claim_id, differ)  # one factor at a time
    assert {c.section for c in cl} == {"Abstract", "6.1", "7"}
    # one Holm family per experiment (docs/statistics.md section 3), of the sizes the
    # reference README and data/published/README.md give; the bytes are facts, in none
    fam = analysis.families()
    assert sum(len(v) for v in fam.values()) == len(cl)
    assert {f: len({family_key(c) for c in v}) for f, v in fam.items()} == {
        "procedure": 16, "memory": 4, "sizes (facts)": 8,
    }  # fmt: skip
    assert all(c.metric in published.FACTS for c in fam["sizes (facts)"])
    assert not any(c.metric in published.FACTS for f in ("procedure", "memory") for c in fam[f])


def test_claims_bands_hold_the_printed_numbers() -> None:
    res = published.load_results()
    by_id = {c.claim_id: c for c in published.claims()}
    printed = {
        "B01a": ("Abstract", "25.1%"),
        "B03d": ("6.1", "8.13%"),
        "B07a": ("6.1", "25.1%"),
        "B10a": ("6.1", "25.80%"),
        "B10b": ("6.1", "58.2%"),
    }
    for cid, (section, text) in printed.items():
        c = by_id[cid]
        pct = _row(res, section, text)["value"]
        assert c.published_ratio == pytest.approx(1 - pct / 100), cid  # (J - P) / J
        assert c.band_low < 1 - pct / 100 < c.band_high, cid
        assert published_consistent(c) is True, cid
    worst, best = (_row(res, "6.1", t)["value"] for t in ("64.54%", "72.28%"))
    for cid in ("B11a", "B11b", "B11c"):
        c = by_id[cid]
        assert c.band_low < 1 - best / 100 < 1 - worst / 100 < c.band_high
    # the exception of Fig. 29 is not what the thesis's own example user gives
    assert published_consistent(by_id["B09e"]) is False
    e = published.element_sizes()
    five = 5 * e["user_protobuf_element"], 5 * e["user_json_element"] + len('{"users":[]}') - 1
    assert by_id["B09e"].published_ratio == pytest.approx(five[0] / five[1], abs=5e-5)


def test_styles() -> None:
    assert published.style("protobuf", "nested", "post", "gzip") == (
        "protobuf-nested-post-gzip-nocache"
    )
    assert len(published.STYLES) == 32
    with pytest.raises(ValueError, match="xml"):
        published.style("xml", "flat")
    with pytest.raises(ValueError, match="format-structure"):
        published.parse_style("json-flat")


def test_every_quote_and_number_is_in_the_thesis() -> None:
    raw = seed_text(seeds.BUONO_THESIS)
    text = _normalise(raw)
    res = published.load_results()
    for q in res["quote"]:
        assert q in text, q
    grid = published.load_grid()
    for cap in grid["caption"]:
        assert cap in text, cap
    tokens = _tokens(raw)
    for c in published.claims():
        assert c.quote in text and _quote_in(c.quote, tokens), c.claim_id
    # every result number of the abstract and section 6.1 has its row
    abstract = text[text.index("Abstract The accelerating") : text.index("Keywords")]
    body = text[text.rindex("6.1 Research Question 1") : text.rindex("6.2 Research Question 2")]
    unit = r"(\d+(?:\.\d+)?)\s?(%|ms|MB|KB)"
    for section, part in (("Abstract", abstract), ("6.1", body)):
        found = {m.group(1) for m in re.finditer(unit, part)}
        rows = res[(res["section"] == section) & res["unit"].isin(["%", "ms", "MB", "KB"])]
        assert found == {re.match(r"[^\d]*([\d.]+)", p).group(1) for p in rows["printed"]}  # type: ignore[union-attr]


# --------------------------------------------------------------------------- strict loading


def _copy(tmp_path: Path, src: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    return dst


def test_bad_results_name_the_line(tmp_path: Path) -> None:
    p = _copy(tmp_path, published.RESULTS_CSV)
    text = p.read_text()
    p.write_text(text.replace(",8.13%,8.13,", ",8.13%,8.31,", 1))
    with pytest.raises(published.PublishedDataError, match=r"line \d+: value '8.31' is not"):
        published.load_results(p)
    p.write_text(text.replace("typo;bound", "typo;guess", 1))
    with pytest.raises(published.PublishedDataError, match="flags"):
        published.load_results(p)
    p.write_text(text.replace(",nested,POST,650,", ",complex,POST,650,", 1))
    with pytest.raises(published.PublishedDataError, match="structure='complex'"):
        published.load_results(p)
    p.write_text(text.replace(",GET,5,off,", ",GET,five,off,", 1))
    with pytest.raises(published.PublishedDataError, match="count='five'"):
        published.load_results(p)


def test_bad_grid_and_claims(tmp_path: Path) -> None:
    g = _copy(tmp_path, published.GRID_CSV)
    text = g.read_text()
    g.write_text(text.replace(",response_ms,", ",latency,", 1))
    with pytest.raises(published.PublishedDataError, match="measures='latency'"):
        published.load_grid(g)
    c = _copy(tmp_path, published.CLAIMS_CSV)
    text = c.read_text()
    c.write_text(text.replace("B01b,B01,", "B01a,B01,", 1))
    with pytest.raises(published.PublishedDataError, match="duplicate claim_id 'B01a'"):
        published.load_claims(c)
    c.write_text(text.replace("json-flat-get-raw-nocache", "json-flat-put-raw-nocache", 1))
    with pytest.raises(published.PublishedDataError, match="b_style='json-flat-put-raw-nocache'"):
        published.claims(c)
    c.write_text(text.replace(",server_ms,", ",cpu_ms,", 1))
    with pytest.raises(published.PublishedDataError, match="metric='cpu_ms'"):
        published.claims(c)


# --------------------------------------------------------------------------- the claims at work


def _thesis_world(runs: int = 7, seed: int = 0) -> pd.DataFrame:
    """A per-run table shaped as the thesis reads: every claim's cells, values that do what
    the thesis says (its percentages exactly), 0.5% noise per run, OOM outcomes constant."""
    rng = np.random.default_rng(seed)
    s = published.style
    base: dict[tuple[str, int], dict[str, float]] = {}
    for structure in published.STRUCTURES:
        base[(s("json", structure), 5)] = {"response_ms": 24.0, "codec_ms": 2.0}
        base[(s("protobuf", structure), 5)] = {"response_ms": 24.0 * 0.9187, "codec_ms": 1.5}
        for f in published.FORMATS:
            base[(s(f, structure, cache="cache"), 5)] = {"response_ms": 5.0}
    post = {f: s(f, "nested", "post", "gzip") for f in published.FORMATS}
    get = {f: s(f, "nested", "get", "gzip") for f in published.FORMATS}
    # parsing is slower than encoding, and Protobuf's gain is larger in parsing (B06)
    base[(post["json"], 650)] = {"server_ms": 654.6, "response_ms": 800.0, "codec_ms": 600.0}
    base[(post["protobuf"], 650)] = {
        "server_ms": 490.3, "response_ms": 800.0 * 0.749, "codec_ms": 300.0, "codec_pb_json": 0.5,
    }  # fmt: skip
    base[(post["json"], 5)] = {"server_ms": 6.0}
    base[(post["protobuf"], 5)] = {"server_ms": 5.5}
    base[(get["json"], 650)] = {"server_ms": 400.0, "codec_ms": 300.0}
    base[(get["protobuf"], 650)] = {"codec_pb_json": 0.9}
    sizes = {  # (structure, count, compression): (json bytes, protobuf / json)
        ("flat", 5, "raw"): (1000.0, 1.1),  # the exception of Fig. 29
        ("flat", 100_000, "raw"): (21.2e6, 0.742),
        ("flat", 5, "gzip"): (400.0, 0.418),
        ("nested", 5, "raw"): (7_000.0, 0.33),
        ("nested", 325, "raw"): (455_000.0, 0.30),
        ("nested", 650, "raw"): (910_000.0, 0.28),
    }
    for (structure, count, comp), (j, r) in sizes.items():
        for f, v in (("json", j), ("protobuf", j * r)):
            base.setdefault((s(f, structure, compression=comp), count), {})["body_bytes"] = v
    base[(s("json", "flat"), 100_000)] |= {"peak_rss_mb": 200.0}
    base[(s("protobuf", "flat"), 100_000)] |= {"peak_rss_mb": 210.0}
    # JSON killed after its JVM took more heap; Protobuf completed within less (B16)
    base[(s("json", "flat"), 300_000)] = {
        "oom_killed": 1.0, "transient_rss_mb": 200.0, "heap_committed_mb": 330.0,
    }  # fmt: skip
    base[(s("protobuf", "flat"), 300_000)] = {
        "oom_killed": 0.0, "transient_rss_mb": 220.0, "heap_committed_mb": 280.0,
    }  # fmt: skip
    fixed = ("oom_killed", *published.FACTS)  # the same in every run
    rows = []
    for (st, users), metrics in base.items():
        for _ in range(runs):
            noisy = {m: v if m in fixed else v * rng.normal(1, 0.005) for m, v in metrics.items()}
            rows.append({"style": st, "users": users, **noisy})
    return pd.DataFrame(rows)


def test_a_world_that_does_what_the_thesis_says_reproduces_every_claim() -> None:
    world = _thesis_world()
    table = analysis.evaluate(world).set_index("claim_id")  # one Holm family per experiment
    assert len(table) == len(published.claims())
    wrong = table.loc[table["verdict"] != REPRODUCED, ["verdict", "reason"]]
    # but one: the thesis's own flat worst case (25.80 % smaller) is not a "considerable"
    # improvement on the standard band; the committed heap (B16c) is judged where a JVM's GC
    # log gives it
    assert sorted(wrong.index) == ["B08a"], wrong.to_string()
    assert wrong.loc["B08a", "verdict"] == NOT_REPRODUCED
    # without a heap (Python's runs) B16c cannot be judged either way
    no_heap = analysis.evaluate(world.drop(columns=["heap_committed_mb"]))
    b16c = no_heap.set_index("claim_id").loc["B16c"]
    assert b16c["verdict"] == INCONCLUSIVE and "not measured" in b16c["reason"]
    # the bytes are facts: compared by value, no p-value, in no Holm family
    sizes = table[table["evidence"] == "fact"]
    assert len(sizes) and sizes["p_value"].isna().all() and (sizes["family"] == "").all()
    assert set(table.loc[table["evidence"] == "test", "family"]) == {"procedure", "memory"}
    # and one that does the opposite (Protobuf slower) is caught
    flipped = world.copy()
    pb = flipped["style"].str.startswith("protobuf") & flipped["style"].str.contains("nocache")
    flipped.loc[pb, "response_ms"] *= 1.5
    table = analysis.evaluate(flipped).set_index("claim_id")
    assert table.loc["B02a", "verdict"] == NOT_REPRODUCED
    assert table.loc["B03d", "verdict"] == NOT_REPRODUCED


@pytest.mark.parametrize(
    ("pb_at_650", "verdict"),
    [(0.28, REPRODUCED), (0.33, NOT_REPRODUCED), (0.33 * 1.000037, NOT_REPRODUCED)],
)
def test_the_reduction_growing_with_size_is_a_fact_either_way(
    pb_at_650: float, verdict: str
) -> None:
    """B13b (the efficiency grows with the size): the exact growth ratio decides, strictly:
    a reduction that grows is reproduced, one that stays or falls (1.000037) is not."""
    world = _thesis_world()
    s = published.style
    at650 = (world["style"] == s("protobuf", "nested")) & (world["users"] == 650)
    world.loc[at650, "body_bytes"] = 910_000.0 * pb_at_650  # P / J at 5 is 0.33
    table = analysis.evaluate(world).set_index("claim_id")
    assert table.loc["B13b", "verdict"] == verdict
    assert table.loc["B13b", "evidence"] == "fact"
