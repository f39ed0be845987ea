"""The size table: compact JSON against protobuf, raw and gzip (no timing)."""

from __future__ import annotations

from ipclab.studies.buono.sizes import COLUMNS, size_table


def test_the_size_table_shape_and_ordering() -> None:
    table = size_table(counts=(5, 50, 650))
    assert list(table.columns) == COLUMNS
    assert list(zip(table.structure, table["count"], strict=True)) == [
        ("flat", 5), ("flat", 50), ("flat", 650),
        ("nested", 5), ("nested", 50), ("nested", 650),
    ]  # fmt: skip
    # raw: protobuf always smaller, more so for the nested structure
    assert (table.protobuf_bytes < table.json_bytes).all()
    flat, nested = table[table.structure == "flat"], table[table.structure == "nested"]
    assert flat.reduction_pct.min() > 20 and flat.reduction_pct.max() < 35
    assert nested.reduction_pct.min() > flat.reduction_pct.max()
    # gzip removes most of JSON's repeated keys: the two land within a few percent, and for
    # flat lists beyond a handful of users protobuf+gzip is the larger
    assert (table.gzip_reduction_pct.abs() < 10).all()
    assert (flat[flat["count"] >= 50].gzip_reduction_pct < 0).all()
    assert (table.json_gzip_bytes < table.json_bytes).all()
    assert (table.protobuf_gzip_bytes < table.protobuf_bytes).all()
