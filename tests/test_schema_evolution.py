"""Schema evolution as protoc and the protobuf runtime do it (docs/schema-evolution.md)."""

from __future__ import annotations

import pytest

from ipclab.studies.buono import evolution
from ipclab.studies.buono.schemas import ProtocError, messages


def test_the_doc_is_what_the_generator_writes() -> None:
    assert evolution.DOC.read_text() == evolution.render(), (
        "regenerate: python -m ipclab.studies.buono.evolution"
    )


def by_case() -> dict[str, evolution.Outcome]:
    return {o.case: o for o in evolution.outcomes()}


def test_old_and_new_readers_keep_what_they_do_not_know() -> None:
    v1, v2 = messages(evolution.V1)["Person"], messages(evolution.V2)["Person"]
    new = v2(id=1, firstName="Mario", lastName="Rossi")
    old_view = v1.FromString(new.SerializeToString())
    assert old_view.id == 1 and old_view.name == ""
    assert v2.FromString(old_view.SerializeToString()) == new  # passed on untouched
    old = v1(id=1, name="Mario Rossi")
    new_view = v2.FromString(old.SerializeToString())
    assert (new_view.firstName, new_view.lastName) == ("", "")
    assert v1.FromString(new_view.SerializeToString()).name == "Mario Rossi"


@pytest.mark.parametrize(
    ("source", "error"),
    [
        (evolution.V2_REUSES_TAG, 'Field "nickname" uses reserved number 2'),
        (evolution.V2_REUSES_NAME, 'Field name "name" is reserved'),
        (evolution.V2_RANGES_REUSED, 'Field "nickname" uses reserved number 11'),
        (evolution.FULLNAME_V2_TAG_AND_NAME, 'Field name "fullName" is reserved'),
    ],
)
def test_protoc_refuses_a_reserved_tag_or_name(source: str, error: str) -> None:
    with pytest.raises(ProtocError, match=error):
        messages(source)


def test_a_reused_name_changes_meaning_in_json_only() -> None:
    cases = by_case()
    assert cases["name reused, only the tag reserved (binary)"].safe
    assert not cases["name reused, only the tag reserved (JSON)"].safe
    assert "fullName='Mario Rossi'" in cases["name reused, only the tag reserved (JSON)"].result
    assert not cases["removed tag reused without `reserved`"].safe


def test_the_integer_types_read_each_other_with_truncation_and_sign_changes() -> None:
    reads = {(r.writer, r.value): r for r in evolution.int_reads()}
    minus_one = reads[("int32", -1)]
    assert len(minus_one.wire) == 10  # sign-extended to 64 bits on the wire
    assert minus_one.read == {
        "int32": -1, "uint32": 2**32 - 1, "int64": -1, "uint64": 2**64 - 1, "bool": True,
        "sint64": -(2**63),
    }  # fmt: skip
    assert reads[("int64", 2**32)].read["int32"] == 0  # beyond 32 bits: the low 32 kept
    assert reads[("int64", 2**32 + 5)].read["uint32"] == 5
    assert reads[("uint32", 2**31)].read["int32"] == -(2**31)  # bit 31 becomes the sign
    assert reads[("uint64", 2**63)].read["int64"] == -(2**63)
    assert reads[("bool", True)].read == {
        "int32": 1, "uint32": 1, "int64": 1, "uint64": 1, "bool": True, "sint64": -1,
    }  # fmt: skip
    # within a shared range every compatible type reads the value unchanged
    for (writer, value), r in reads.items():
        if writer != "sint64" and 0 <= value < 2**31:
            assert all(r.read[t] == value for t in ("int32", "uint32", "int64", "uint64"))
