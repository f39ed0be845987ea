"""Nyfløtt 2017's Tables 2 and 3 as copied into data/published (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipclab.studies.nyflott import published as pub


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
