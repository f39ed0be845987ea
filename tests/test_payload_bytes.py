"""The payload domain at byte level: the study's own encoding examples, and the JSON and
protobuf encodings of every structure holding the same data."""

from __future__ import annotations

import pytest
from google.protobuf import json_format
from ipclab_services.domains.payload import codec, data
from ipclab_services.proto import payments_pb2, users_pb2

from ipclab.studies.buono.schemas import messages

NAME = 'syntax = "proto3";\nmessage Name { string firstName = 1; string lastName = 2; }\n'
VARINT = 'syntax = "proto3";\nmessage V { uint32 v = 1; }\n'
# Kleppmann's Person (the study's Fig. 13), proto2 as printed
PERSON = """syntax = "proto2";
message Person {
  required string user_name = 1;
  optional int64 favorite_number = 2;
  repeated string interests = 3;
}
"""
PERSON_BYTES = bytes.fromhex(
    "0a 06 4d 61 72 74 69 6e 10 b9 0a 1a 0b 64 61 79 64 72 65 61 6d 69 6e 67"
    " 1a 07 68 61 63 6b 69 6e 67"
)
# the study's Fig. 21, the example user printed with the schema
FIG21_USER = {
    "uid": "beb1beb2-f69b-4f74-9c3f-83e3a8271739",
    "email": "coleman.balistreri@yahoo.com",
    "username": "vidal.hammes",
    "profilePictureURL": "https://s3.amazonaws.com/uifaces/faces/twitter/mandalareopens/128.jpg",
    "age": 0,
}


@pytest.mark.parametrize("library", codec.JSON_LIBRARIES)
def test_mario_rossi_is_14_bytes_of_protobuf_and_40_of_compact_json(library: str) -> None:
    name = messages(NAME)["Name"](firstName="Mario", lastName="Rossi")
    wire = name.SerializeToString()
    assert wire == bytes.fromhex("0a 05 4d 61 72 69 6f 12 05 52 6f 73 73 69")
    assert len(wire) == 14
    # the study's "125Mario225Rossi": field 1, wire type 2, length 5, then field 2
    assert (wire[0] >> 3, wire[0] & 7, wire[1]) == (1, 2, 5)
    assert (wire[7] >> 3, wire[7] & 7, wire[8]) == (2, 2, 5)
    document = json_format.MessageToDict(name, preserving_proto_field_name=True)
    text = codec.encode_json(document, library)  # type: ignore[arg-type]
    assert text == b'{"firstName":"Mario","lastName":"Rossi"}'
    assert len(text) == 40


def test_varint_300_is_ac_02() -> None:
    wire = messages(VARINT)["V"](v=300).SerializeToString()
    assert wire == bytes.fromhex("08 ac 02")  # tag (field 1, varint), then the value
    assert " ".join(f"{b:08b}"[:4] + " " + f"{b:08b}"[4:] for b in wire[1:]) == (
        "1010 1100 0000 0010"
    )


def test_the_33_byte_person() -> None:
    person_type = messages(PERSON, "person.proto")["Person"]
    person = person_type(
        user_name="Martin", favorite_number=1337, interests=["daydreaming", "hacking"]
    )
    assert person.SerializeToString() == PERSON_BYTES
    assert len(PERSON_BYTES) == 33
    read = person_type.FromString(PERSON_BYTES)
    assert (read.user_name, read.favorite_number, list(read.interests)) == (
        "Martin",
        1337,
        ["daydreaming", "hacking"],
    )


def test_the_example_user_153_bytes_against_211_of_json() -> None:
    """The reference's hand count of Fig. 21: age 0 is left off the wire by proto3."""
    user = users_pb2.User(**FIG21_USER)
    assert len(user.SerializeToString()) == 153
    assert len(users_pb2.Users(users=[user]).SerializeToString()) == 156
    assert len(codec.encode_json(FIG21_USER)) == 211
    assert len(codec.encode_json({"users": [FIG21_USER]})) == 223


def test_the_schemas_are_the_printed_ones() -> None:
    assert [f.name for f in users_pb2.User.DESCRIPTOR.fields] == [
        "uid", "email", "username", "profilePictureURL", "age",
    ]  # fmt: skip
    assert [(f.name, f.number) for f in payments_pb2.Payment.DESCRIPTOR.fields] == [
        ("id", 1), ("createTime", 2), ("updateTime", 3), ("paymentState", 4), ("payer", 5),
        ("transactions", 6),
    ]  # fmt: skip
    assert payments_pb2.Payment.PaymentState.Value("DECLINED") == 1
    assert [f.name for f in payments_pb2.Transaction.DESCRIPTOR.fields] == [
        "description", "items", "shippingAddress", "subtotal", "tax", "shipping",
    ]  # fmt: skip


# every count up to 650 would rebuild 211,000 payments; these cover the ends, the study's
# counts (5, 325, 650) and a prefix check ties the others to the 650 list
COUNTS = (0, 1, 2, 5, 50, 100, 325, 650)


@pytest.mark.parametrize("structure", data.STRUCTURES)
@pytest.mark.parametrize("count", COUNTS)
def test_json_and_protobuf_hold_the_same_data(structure: data.Structure, count: int) -> None:
    ds = data.dataset(structure, count)
    assert len(ds.document[data.WRAPPER[structure]]) == count
    wire = codec.encode_protobuf(ds.message)
    assert codec.message_to_document(codec.decode_protobuf(structure, wire)) == ds.document
    texts = {lib: codec.encode_json(ds.document, lib) for lib in codec.JSON_LIBRARIES}
    assert len(set(texts.values())) == 1  # the standard library and orjson agree byte for byte
    for text in texts.values():
        for lib in codec.JSON_LIBRARIES:
            document = codec.decode_json(text, lib)
            assert document == ds.document
            # JSON read back into the schema is the same message, to the byte
            assert codec.encode_protobuf(data.to_message(structure, document)) == wire


@pytest.mark.parametrize("structure", data.STRUCTURES)
def test_every_shorter_list_is_a_prefix_of_the_longest(structure: data.Structure) -> None:
    full = data.dataset(structure, 650).document[data.WRAPPER[structure]]
    for count in (3, 7, 64, 649):
        assert data.dataset(structure, count).document[data.WRAPPER[structure]] == full[:count]


def test_data_is_built_once_and_depends_on_the_seed() -> None:
    assert data.dataset("flat", 5) is data.dataset("flat", 5)
    assert data.user(1, 0) == data.user(1, 0) != data.user(2, 0)
    nested = data.dataset("nested", 1).document["payments"][0]
    assert len(nested["transactions"]) == data.TRANSACTIONS_PER_PAYMENT
    assert all(len(t["items"]) == data.ITEMS_PER_TRANSACTION for t in nested["transactions"])
    assert all(u["age"] > 0 for u in data.dataset("flat", 50).document["users"])


@pytest.mark.parametrize("count", (-1, 10**9))
def test_a_count_out_of_range_is_refused(count: int) -> None:
    with pytest.raises(ValueError, match="count"):
        data.dataset("flat", count)


def test_a_truncated_protobuf_body_is_an_error() -> None:
    from google.protobuf.message import DecodeError

    wire = codec.encode_protobuf(data.dataset("nested", 5).message)
    with pytest.raises(DecodeError):
        codec.decode_protobuf("nested", wire[: len(wire) // 2])


def test_the_protobuf_backend_is_reported() -> None:
    backend = codec.protobuf_backend()
    assert backend["implementation"] in {"upb", "python", "cpp"}
    assert backend["protobuf"].count(".") >= 2
