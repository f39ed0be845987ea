"""Nyfløtt 2017's Tables 2 and 3 and the claims of chapters 4 and 5, as copied into
data/published (issue 14)."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pandas as pd
import pytest

from ipclab.published import Claim
from ipclab.studies.nyflott import published as pub
from ipclab.studies.nyflott import verdicts
from tests import seeds
from tests.seeds import seed_text
from tests.test_published import _quote_in, _tokens


def test_table_2_exact_and_complete() -> None:
    t = pub.load_requests()
    assert len(t) == 9
    assert set(zip(t["style"], t["delay_ms"], strict=True)) == {
        (s, d) for s in pub.STYLES for d in pub.DELAYS_MS
    }
    assert set(t["page"]) == {52} and set(t["table"]) == {"2"}
    row = t[(t["style"] == "coap") & (t["delay_ms"] == 0)].iloc[0]
    assert (row.requests, row.mean_ms, row.max_ms, row.min_ms, row.sd_ms) == (
        895542,
        6.4042,
        245,
        2,
        4.0090,
    )
    assert int(t["requests"].sum()) == 3078473 + 1164896 + 591816  # per delay: 0, 2, 5 ms
    # the thesis's ordering: http1.1 < h2c < coap in mean at every delay
    for _, g in t.groupby("delay_ms"):
        means = dict(zip(g["style"], g["mean_ms"], strict=True))
        assert means["http1"] < means["h2c"] < means["coap"]


def test_table_3_exact_and_bytes_per_packet_consistent() -> None:
    t = pub.load_network()
    assert len(t) == 9 and set(t["page"]) == {56}
    row = t[(t["style"] == "http1") & (t["delay_ms"] == 5)].iloc[0]
    assert (row.bytes_per_request, row.packets_per_request, row.bytes_per_packet) == (
        3896.4796,
        9.5806,
        406.7032,
    )
    ratio = t["bytes_per_request"] / t["packets_per_request"]
    assert ((ratio - t["bytes_per_packet"]).abs() < 0.002).all()


def test_bad_rows_are_named(tmp_path: Path) -> None:
    text = pub.REQUESTS_CSV.read_text().splitlines()
    bad = tmp_path / "t.csv"
    bad.write_text("\n".join([text[0], text[1].replace(",coap,coap,", ",coap,h2c,")]) + "\n")
    with pytest.raises(pub.PublishedDataError, match="line 2: protocol 'coap'"):
        pub.load_requests(bad)
    bad.write_text("\n".join([text[0], text[1].replace(",0,600,", ",3,600,")]) + "\n")
    with pytest.raises(pub.PublishedDataError, match="delay_ms=3"):
        pub.load_requests(bad)


# --------------------------------------------------------------------------- claims

SECTIONS = {"4.2.5": "47-51", "4.3.1": "52-53", "4.3.2": ("53-56", "56"), "4.3.3": "56-57",
            "4.4": "57-58", "4.4.2": "60-61", "4.5.1": "61-62", "5.1": "65-68",
            "Abstract": "v"}  # fmt: skip
TABLE = {  # metric -> (loader, column): the claims' published ratios come from Tables 2 and 3
    "mean_ms": ("requests", "mean_ms"),
    "sd_ms": ("requests", "sd_ms"),
    "min_ms": ("requests", "min_ms"),
    "rps": ("requests", "requests"),  # one 600 s window per cell: the ratio of req/s
    "bytes_per_request": ("network", "bytes_per_request"),
    "packets_per_request": ("network", "packets_per_request"),
    "bytes_per_packet": ("network", "bytes_per_packet"),
}


def test_claims_valid_ids_unique_and_cover_chapters_4_and_5() -> None:
    df = pub.load_claims()
    cl = pub.claims()
    assert len(cl) == len(df) > 100
    assert len({c.claim_id for c in cl}) == len(cl)
    assert all(c.claim_id.startswith(c.statement_id) for c in cl)
    statements = sorted({c.statement_id for c in cl})
    assert statements == [f"N{i:02d}" for i in range(1, len(statements) + 1)]
    assert {c.document for c in cl} == {"thesis"} and {c.scope for c in cl} == {"performance"}
    for c in cl:
        want = SECTIONS[c.section]
        assert c.page in (want if isinstance(want, tuple) else (want,)), c.claim_id
        loads = {*c.a_users, *c.b_users, c.from_users, c.to_users} - {None}
        assert loads <= set(pub.DELAYS_MS), c.claim_id
        assert {c.a_style, c.b_style} <= set(pub.CLAIM_STYLES)
    # one quote per statement, and every statement's parts share it
    for sid in statements:
        assert len({c.quote for c in cl if c.statement_id == sid}) == 1, sid
    metrics = {c.metric for c in cl}
    assert {"mean_ms", "sd_ms", "rps", "bytes_per_request", "packets_per_request"} <= metrics
    assert {"cpu_gateway_percent", "slow_per_1000"} <= metrics


@functools.cache
def _table(name: str) -> pd.DataFrame:
    t = pub.load_requests() if name == "requests" else pub.load_network()
    return t.set_index(["style", "delay_ms"])


def _published(metric: str, style: str, delays: tuple[int, ...]) -> float:
    name, col = TABLE[metric]
    t = _table(name)
    return sum(float(t.loc[(style, d), col]) for d in delays) / len(delays)


def _gap(c: Claim) -> float:
    """N32's statistic on Tables 2 and 3: exp(|log r_first| - |log r_second|)."""
    first, second = verdicts.SIZE_GAPS[c.metric]
    logs = [
        math.log(_published(m, c.a_style, c.a_users) / _published(m, c.b_style, c.b_users))
        for m in (first, second)
    ]
    return math.exp(abs(logs[0]) - abs(logs[1]))


def test_claims_published_ratios_match_tables_2_and_3() -> None:
    checked = 0
    for c in pub.claims():
        if verdicts.is_fix(c):  # N33a: "double", no table's number
            assert c.published_ratio == 2.0, c.claim_id
            continue
        if c.metric in verdicts.SIZE_GAPS:
            assert c.published_ratio == pytest.approx(_gap(c), abs=6e-5), c.claim_id
            continue
        if c.metric not in TABLE:
            assert c.published_ratio is None, c.claim_id  # CPU, slow requests: no numbers
            continue
        if c.test == "interaction":
            assert c.from_users is not None and c.to_users is not None
            f, t = (c.from_users,), (c.to_users,)
            want = (_published(c.metric, c.a_style, t) / _published(c.metric, c.a_style, f)) / (
                _published(c.metric, c.b_style, t) / _published(c.metric, c.b_style, f)
            )
        else:
            want = _published(c.metric, c.a_style, c.a_users) / _published(
                c.metric, c.b_style, c.b_users
            )
        assert c.published_ratio == pytest.approx(want, abs=6e-5), c.claim_id
        checked += 1
    assert checked > 60


def test_claims_flag_what_the_tables_contradict() -> None:
    from ipclab.claims import published_consistent

    by_id = {c.claim_id: c for c in pub.claims()}
    wrong = {cid for cid, c in by_id.items() if published_consistent(c) is False}
    # CoAP's SD at 0 ms "stands out from the other configurations" but is below every
    # configuration at 2 and 5 ms; CoAP's throughput at 0 ms is not "much lower" than h2c's
    # or HTTP/1.1's, nor its packets "considerably smaller" than h2c's, on the standard
    # considerable band (outside [0.64, 1.5625]: 0.869, 0.777, 0.750)
    assert wrong == {"N13j", "N13k", "N13m", "N13n", "N13o", "N13p", "N25c", "N25d", "N08e"}
    assert all("INCONSISTENT" in by_id[c].note for c in wrong)
    # the signed SD interactions hold, but the ratio crosses 1 and ends no closer to it
    for cid in ("N05d", "N05e"):
        assert published_consistent(by_id[cid]) is True and "INCONSISTENT" in by_id[cid].note
    assert "INCONSISTENT" not in by_id["N05f"].note
    ambiguous = {c.statement_id for c in by_id.values() if "AMBIGUOUS" in c.note}
    assert ambiguous == {"N02", "N16", "N26"}


def test_every_claim_quote_is_in_the_thesis() -> None:
    text = seed_text(seeds.NYFLOTT_THESIS)
    flat = " ".join(text.split())
    tokens = _tokens(text)
    for c in pub.claims():
        if " ".join(c.quote.split()) in flat:
            continue
        # only where a figure or a page break interrupts the sentence, and the note says so
        assert "Figure 10" in c.note or "page break" in c.note, c.claim_id
        assert _quote_in(c.quote, tokens), c.claim_id


def test_claims_bad_rows_are_named(tmp_path: Path) -> None:
    text = pub.CLAIMS_CSV.read_text()
    bad = tmp_path / "c.csv"
    bad.write_text(text.replace("N01b,N01,", "N01a,N01,", 1))
    with pytest.raises(pub.PublishedDataError, match="duplicate claim_id 'N01a'"):
        pub.load_claims(bad)
    bad.write_text(text.replace(",coap,0,h2c,0,", ",coap,3,h2c,0,", 1))
    with pytest.raises(pub.PublishedDataError, match="line 2: delay 3 ms"):
        pub.claims(bad)
    bad.write_text(text.replace(",coap,0,h2c,0,", ",coap,-2,h2c,0,", 1))
    with pytest.raises(pub.PublishedDataError, match="must not be negative"):
        pub.load_claims(bad)
    bad.write_text(text.replace(",coap,0,h2c,0,", ",grpc,0,h2c,0,", 1))
    with pytest.raises(pub.PublishedDataError, match="a_style='grpc'"):
        pub.load_claims(bad)
