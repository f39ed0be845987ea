"""Payloads of two shapes for measuring data interchange formats: a flat list of users and
a nested list of payments (payment -> transactions -> items and a shipping address).

``data`` builds them from a seed, once per (structure, count), both as protobuf messages
(``proto/users.proto``, ``proto/payments.proto``) and as JSON-ready documents whose keys are
the proto field names; ``codec`` encodes and decodes them (JSON with the standard library
or orjson, protobuf with whichever backend the ``protobuf`` package runs on).

``http`` holds the study's two services as ASGI apps: the data service (``GET`` and
``POST /{format}/{structure}``, gzip with a bound on inflated size, a cache of serialised
answers, ``Server-Timing``) and the edge service that calls it over HTTP. Their stack
declaration (processes, containers, the 400 MB limit) is not written yet.
"""
