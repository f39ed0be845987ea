"""Schema evolution, checked by running protoc and the protobuf runtime rather than argued
from the documentation: v1 and v2 of a message with added, removed and reserved fields;
v2 bytes read by v1 and the reverse; protoc refusing a reserved tag or name; the JSON
mapping changing meaning when a field name is reused without reserving it; and the
recommendation that int32, uint32, int64, uint64 and bool are compatible, value by value.

``python -m ipclab.studies.buono.evolution`` writes docs/schema-evolution.md; a test checks
that the committed file is what ``render()`` gives.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import json_format
from google.protobuf.message import Message

from ipclab.paths import REPO_ROOT
from ipclab.studies.buono.schemas import ProtocError, messages

DOC = REPO_ROOT / "docs" / "schema-evolution.md"

# v1: a person with one name field.
V1 = """syntax = "proto3";
package evolution;
message Person {
  uint64 id = 1;
  string name = 2;
  string email = 3;
  bool is_active = 4;
}
"""

# v2: name split into firstName and lastName (added), name removed and both its tag and its
# name reserved, so the next free tag is 5 (the scenario of the study's Fig. 24).
V2 = """syntax = "proto3";
package evolution;
message Person {
  reserved 2;
  reserved "name";
  uint64 id = 1;
  string email = 3;
  bool is_active = 4;
  string firstName = 5;
  string lastName = 6;
}
"""

# What protoc must refuse: v2 with a reserved tag or a reserved name used again.
V2_REUSES_TAG = V2.replace(
    "  string lastName = 6;\n", "  string lastName = 6;\n  string nickname = 2;\n"
)
V2_REUSES_NAME = V2.replace(
    "  string lastName = 6;\n", "  string lastName = 6;\n  string name = 7;\n"
)
# Reserved tags enumerated several ways in one line (Fig. 26), then one of them used.
V2_RANGES = V2.replace("  reserved 2;\n", "  reserved 2, 8, 10 to 12, 100 to max;\n")
V2_RANGES_REUSED = V2_RANGES.replace(
    "  string lastName = 6;\n", "  string lastName = 6;\n  string nickname = 11;\n"
)
# Without reserved: the removed tag 2 reused for another string, of another meaning.
V2_UNRESERVED_TAG = V1.replace("  string name = 2;\n", "  string nickname = 2;\n")

# Fig. 25: v1's fullName is the person's name; v2 removes it, reserves tag 2 only, and adds
# a field of the same name with another meaning (the person's emergency contact).
FULLNAME_V1 = """syntax = "proto3";
package evolution;
message Person {
  uint64 id = 1;
  string fullName = 2;  // the person's own name
}
"""
FULLNAME_V2_TAG_ONLY = """syntax = "proto3";
package evolution;
message Person {
  reserved 2;
  uint64 id = 1;
  string fullName = 7;  // now: the name of the person's emergency contact
}
"""
FULLNAME_V2_TAG_AND_NAME = FULLNAME_V2_TAG_ONLY.replace(
    "  reserved 2;\n", '  reserved 2;\n  reserved "fullName";\n'
)

# Table 4, recommendation 4, checked on one field of each type at tag 1 (and sint64 beside
# them: recommendation 5 says it is not compatible with the others).
INT_TYPES = ("int32", "uint32", "int64", "uint64", "bool", "sint64")
SCALARS = 'syntax = "proto3";\npackage evolution;\n' + "".join(
    f"message As_{t} {{ {t} v = 1; }}\n" for t in INT_TYPES
)
INT_CASES: tuple[tuple[str, int | bool], ...] = (
    ("int32", 1),
    ("int32", -1),
    ("int32", 2**31 - 1),
    ("int32", -(2**31)),
    ("uint32", 2**31),
    ("uint32", 2**32 - 1),
    ("int64", -1),
    ("int64", 2**32),
    ("int64", 2**32 + 5),
    ("int64", 2**63 - 1),
    ("int64", -(2**63)),
    ("uint64", 2**63),
    ("uint64", 2**64 - 1),
    ("bool", True),
    ("sint64", -1),
    ("sint64", 1),
)


@dataclass(frozen=True)
class Outcome:
    case: str
    writer: str
    reader: str
    result: str
    safe: bool  # the data keeps its meaning (or is refused, or dropped); False: misread


def _v(source: str) -> type[Message]:
    return messages(source)["Person"]


def _refusal(source: str) -> str:
    try:
        messages(source)
    except ProtocError as e:
        return "protoc refuses: `" + " ".join(str(e).split()) + "`"
    return "protoc compiles it"


def _unknown_count(m: Message) -> int:
    from google.protobuf.unknown_fields import UnknownFieldSet

    return len(UnknownFieldSet(m))


def outcomes() -> list[Outcome]:
    """Every case of docs/schema-evolution.md's first table, in its order: v1 and v2 bytes
    read by the other version, the JSON mapping, protoc's refusals of reserved tags and
    names, and a tag or a name reused without reserving it."""
    p1, p2 = _v(V1), _v(V2)
    old = p1(id=7, name="Mario Rossi", email="mario@example.org", is_active=True)
    new = p2(id=7, firstName="Mario", lastName="Rossi", email="mario@example.org", is_active=True)
    return [
        *_binary_outcomes(p1, p2, old, new),
        _json_mapping_outcome(p1, new),
        *_reserved_refusals(),
        _unreserved_tag_reuse(old),
        *_name_reuse_outcomes(),
    ]


def _binary_outcomes(
    p1: type[Message], p2: type[Message], old: Message, new: Message
) -> list[Outcome]:
    """v2 bytes read by v1 and v1 bytes read by v2: unknown fields are kept and passed on,
    unless discarded on purpose."""
    out: list[Outcome] = []
    read = p1.FromString(new.SerializeToString())
    again = p2.FromString(read.SerializeToString())
    out.append(
        Outcome(
            "added fields (firstName 5, lastName 6), old reader",
            "v2 bytes",
            "v1",
            f"id, email, is_active read; name = {read.name!r} (default); "
            f"{_unknown_count(read)} unknown fields kept, and v1 writing the message again "
            f"passes them on: v2 reads back firstName={again.firstName!r}, "
            f"lastName={again.lastName!r}"
            + ("; bytes identical" if read.SerializeToString() == new.SerializeToString() else ""),
            read.name == "" and again.lastName == "Rossi",
        )
    )
    read2 = p2.FromString(old.SerializeToString())
    back = p1.FromString(read2.SerializeToString())
    out.append(
        Outcome(
            "removed field (name 2, reserved), new reader",
            "v1 bytes",
            "v2",
            f"id, email, is_active read; firstName={read2.firstName!r}, "
            f"lastName={read2.lastName!r} (defaults); the old name is "
            f"{_unknown_count(read2)} unknown field, kept: v1 reads back name={back.name!r}",
            read2.firstName == "" and back.name == "Mario Rossi",
        )
    )
    dropped = p1.FromString(new.SerializeToString())
    dropped.DiscardUnknownFields()
    out.append(
        Outcome(
            "unknown fields discarded on purpose",
            "v2 bytes",
            "v1, then DiscardUnknownFields()",
            f"{_unknown_count(dropped)} unknown fields left; v2 reads back "
            f"firstName={p2.FromString(dropped.SerializeToString()).firstName!r}",
            True,
        )
    )
    return out


def _json_mapping_outcome(p1: type[Message], new: Message) -> Outcome:
    """v2's JSON read by v1: refused by default, its unknown keys dropped (not kept) when
    told to ignore them."""
    doc = json_format.MessageToJson(new, indent=None)
    try:
        json_format.Parse(doc, p1())
        strict = "accepted"
    except json_format.ParseError as e:
        strict = f"refused (`{e}`)"
    lenient = json_format.Parse(doc, p1(), ignore_unknown_fields=True)
    return Outcome(
        "added fields through the JSON mapping",
        f"v2 JSON `{doc}`",
        "v1",
        f"by default {strict}; with ignore_unknown_fields the unknown keys are dropped, "
        f"not kept: v1 writes `{json_format.MessageToJson(lenient, indent=None)}`",
        True,
    )


def _reserved_refusals() -> list[Outcome]:
    """protoc refusing a reserved tag or name used again, and tags reserved several ways in
    one line (Fig. 26)."""
    out: list[Outcome] = []
    out.append(
        Outcome(
            "reserved tag used again", "schema v2 + `string nickname = 2;`", "protoc",
            _refusal(V2_REUSES_TAG), "refuses" in _refusal(V2_REUSES_TAG),
        )
    )  # fmt: skip
    out.append(
        Outcome(
            "reserved name used again", "schema v2 + `string name = 7;`", "protoc",
            _refusal(V2_REUSES_NAME), "refuses" in _refusal(V2_REUSES_NAME),
        )
    )  # fmt: skip
    out.append(
        Outcome(
            "tags reserved several ways in one line",
            "`reserved 2, 8, 10 to 12, 100 to max;`",
            "protoc",
            _refusal(V2_RANGES) + "; with `string nickname = 11;` added: "
            + _refusal(V2_RANGES_REUSED),
            "compiles it" in _refusal(V2_RANGES) and "refuses" in _refusal(V2_RANGES_REUSED),
        )
    )  # fmt: skip
    return out


def _unreserved_tag_reuse(old: Message) -> Outcome:
    """The removed tag reused for another string without ``reserved``: misread silently."""
    reused = _v(V2_UNRESERVED_TAG).FromString(old.SerializeToString())
    return Outcome(
        "removed tag reused without `reserved`",
        "v1 bytes",
        "v1 with `string nickname = 2` in place of name",
        f"no error; nickname={reused.nickname!r}: the old name is read as a nickname",
        False,
    )


def _name_reuse_outcomes() -> list[Outcome]:
    """Fig. 25: a field name reused for another meaning with only its tag reserved is safe
    in binary, misread through JSON, and refused by protoc once the name is reserved too."""
    out: list[Outcome] = []
    f1, f2 = _v(FULLNAME_V1), _v(FULLNAME_V2_TAG_ONLY)
    person = f1(id=7, fullName="Mario Rossi")
    binary = f2.FromString(person.SerializeToString())
    out.append(
        Outcome(
            "name reused, only the tag reserved (binary)",
            "v1 bytes (fullName 2 = own name)",
            "v2 (fullName 7 = emergency contact)",
            f"fullName={binary.fullName!r}; tag 2 is kept as an unknown field: no confusion",
            binary.fullName == "",
        )
    )
    doc = json_format.MessageToJson(person, indent=None)
    via_json = json_format.Parse(doc, f2())
    out.append(
        Outcome(
            "name reused, only the tag reserved (JSON)",
            f"v1 JSON `{doc}`",
            "v2 (fullName 7 = emergency contact)",
            f"accepted without a word: fullName={via_json.fullName!r}, the person's own name "
            "now read as the emergency contact's",
            False,
        )
    )
    out.append(
        Outcome(
            "name reused, tag and name reserved",
            'v2 + `reserved "fullName";`',
            "protoc",
            _refusal(FULLNAME_V2_TAG_AND_NAME),
            "refuses" in _refusal(FULLNAME_V2_TAG_AND_NAME),
        )
    )
    return out


@dataclass(frozen=True)
class IntRead:
    writer: str
    value: int | bool
    wire: bytes  # the field's bytes after its tag
    read: dict[str, int | bool]  # reader type -> value read


def int_reads() -> list[IntRead]:
    types = messages(SCALARS)
    out: list[IntRead] = []
    for writer, value in INT_CASES:
        data = types[f"As_{writer}"](v=value).SerializeToString()
        read = {t: types[f"As_{t}"].FromString(data).v for t in INT_TYPES}
        out.append(IntRead(writer, value, data[1:], read))
    return out


def _cell(written: int | bool, read: int | bool) -> str:
    text = repr(read)
    return text if int(written) == int(read) else f"**{text}**"


def _table(header: list[str], rows: list[list[str]]) -> str:
    def esc(s: str) -> str:
        return " ".join(s.split()).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _changes(r: IntRead) -> list[str]:
    notes = []
    for t, got in r.read.items():
        if int(got) != int(r.value):
            notes.append(f"{t} {got!r}")
    return notes


def render() -> str:
    rows = outcomes()
    reads = int_reads()
    parts = [
        "# Schema evolution: what protoc and the protobuf runtime actually do",
        "",
        "Generated by `python -m ipclab.studies.buono.evolution` (a test checks this file "
        "against it, under whichever protobuf backend it runs: upb and pure Python give "
        "the same outcomes); protoc from grpcio-tools. The study argued its versioning "
        "question from Google's guide "
        '("Updating a message type", reserved fields, its Table 4); here each rule is run.',
        "",
        "## The schemas",
        "",
        "v1 and v2 (name split into firstName and lastName, tag 2 and the name reserved, the "
        "next tag 5):",
        "",
        "```proto\n" + V1 + "```",
        "",
        "```proto\n" + V2 + "```",
        "",
        "The JSON case (the study's Figs. 25 and 26/42): v1 `fullName = 2` is the person's "
        "name; v2 reserves tag 2 and adds `fullName = 7` meaning the emergency contact:",
        "",
        "```proto\n" + FULLNAME_V1 + "```",
        "",
        "```proto\n" + FULLNAME_V2_TAG_ONLY + "```",
        "",
        "## Outcomes",
        "",
        "*safe*: yes where every value keeps its meaning, or the schema is refused, or an "
        "unknown value is dropped; **no** where a value is silently read with another meaning "
        "(the data corruption and privacy bugs the study warns of).",
        "",
        _table(
            ["case", "writer", "reader", "outcome", "safe"],
            [[o.case, o.writer, o.reader, o.result, "yes" if o.safe else "**no**"] for o in rows],
        ),
        "",
        "## int32, uint32, int64, uint64 and bool: compatible?",
        "",
        "One field `v = 1` written with the type on the left and read with each type on the "
        "right (sint64 beside them, which Table 4 says is *not* compatible with the others). "
        "Bold: the value read differs from the value written. All these types share the "
        "varint wire type, so a reader never fails; it converts as C++ casts do: a 64-bit "
        "value read as a 32-bit type keeps its low 32 bits (truncation, and a sign change "
        "for int32 when bit 31 is set), a negative int32 or int64 is written as a 10-byte "
        "two's complement varint that unsigned readers see as 2^64 - |v| (uint64) or its low "
        "32 bits (uint32), bool is true for any non-zero varint, and sint64 (zigzag) "
        "reads every value of the others wrongly except 0.",
        "",
        _table(
            ["written as", "value", "wire bytes", *[f"read as {t}" for t in INT_TYPES], "changed"],
            [
                [
                    r.writer,
                    repr(r.value),
                    r.wire.hex(" "),
                    *[_cell(r.value, r.read[t]) for t in INT_TYPES],
                    "; ".join(_changes(r)) or "none",
                ]
                for r in reads
            ],
        ),  # fmt: skip
        "",
        "So the rule holds in the sense that every reader parses every writer's bytes; the "
        "value survives only where it fits the reader's range: int32 <-> int64 for values in "
        "int32's range, uint32 <-> uint64 for values in uint32's, int64 <-> uint64 for "
        "non-negative values below 2^63, and bool for 0 and 1.",
        "",
    ]
    return "\n".join(parts)


def write(path: Path = DOC) -> None:
    path.write_text(render())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    write(Path(args[0]) if args else DOC)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
