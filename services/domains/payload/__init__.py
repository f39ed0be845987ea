"""Payloads of two shapes for measuring data interchange formats: a flat list of users and
a nested list of payments (payment -> transactions -> items and a shipping address).

``data`` builds them from a seed, once per (structure, count), both as protobuf messages
(``proto/users.proto``, ``proto/payments.proto``) and as JSON-ready documents whose keys are
the proto field names; ``codec`` encodes and decodes them (JSON with the standard library
or orjson, protobuf with whichever backend the ``protobuf`` package runs on).

The services and the gateway of a stack on this domain are not written yet.
"""
