"""gRPC: unary calls with Protocol Buffers over HTTP/2 (grpc.aio on both sides).

Messages come from ``services/proto/*.proto``; each service's operations name their
request and response classes. Servers register generic handlers (no generated stubs
needed); the client opens one channel per service at start and keeps it (with ``--tls``,
a TLS channel: one handshake per service, not per call). Errors travel as
gRPC status codes (NOT_FOUND, INVALID_ARGUMENT); UNAVAILABLE and DEADLINE_EXCEEDED become
503 and 504 at the gateway.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from ipclab_services import reconnect, tls
from ipclab_services.errors import (
    BadRequest,
    NotFound,
    ServiceError,
    Timeout,
    Unavailable,
)
from ipclab_services.transports.base import ConnectConfig, ServeConfig, ServiceDef

_TO_STATUS = {
    NotFound: grpc.StatusCode.NOT_FOUND,
    BadRequest: grpc.StatusCode.INVALID_ARGUMENT,
    Unavailable: grpc.StatusCode.UNAVAILABLE,
    Timeout: grpc.StatusCode.DEADLINE_EXCEEDED,
}
_FROM_STATUS = {code: cls for cls, code in _TO_STATUS.items()}
_CHANNEL_OPTIONS = [("grpc.so_reuseport", 0)]
# a connection's handshake (TLS with --tls) within the head timeout, as every server of the
# roles (gRPC's own default: 120 s)
_SERVER_OPTIONS = [
    *_CHANNEL_OPTIONS,
    ("grpc.server_handshake_timeout_ms", int(tls.HANDSHAKE_TIMEOUT_S * 1000)),
]


def to_dict(msg: Message) -> dict[str, Any]:
    """Message -> dict with the proto's field names, in declaration order.

    Unlike json_format.MessageToDict, int64 stays an int and empty fields are kept, so the
    result equals the dict the other styles carry. An unset message field becomes None.
    """
    out: dict[str, Any] = {}
    for f in msg.DESCRIPTOR.fields:
        value = getattr(msg, f.name)
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            if f.is_repeated:
                out[f.name] = [to_dict(v) for v in value]
            else:
                out[f.name] = to_dict(value) if msg.HasField(f.name) else None
        elif f.is_repeated:
            out[f.name] = list(value)
        else:
            out[f.name] = value
    return out


def from_dict(cls: type[Message], data: dict[str, Any]) -> Message:
    return cls(**{k: v for k, v in data.items() if v is not None})


def _method(service: ServiceDef, op: str) -> str:
    return op.capitalize()


async def serve(service: ServiceDef, config: ServeConfig) -> None:
    def behaviour(op: str) -> Callable[..., Any]:
        response_cls = service.ops[op].response

        async def handle(request: Message, context: grpc.aio.ServicerContext) -> Message:
            try:
                result = await service.invoke(op, to_dict(request))
            except ServiceError as e:
                await context.abort(_TO_STATUS.get(type(e), grpc.StatusCode.INTERNAL), str(e))
            return from_dict(response_cls, result)

        return handle

    handlers = {
        _method(service, op): grpc.unary_unary_rpc_method_handler(
            behaviour(op),
            request_deserializer=o.request.FromString,
            response_serializer=o.response.SerializeToString,
        )
        for op, o in service.ops.items()
    }
    server = grpc.aio.server(options=_SERVER_OPTIONS)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.proto_service, handlers),)
    )
    address = f"{config.host}:{config.port}"
    if (files := tls.files()) is not None:  # TLS 1.3 is gRPC's (BoringSSL's) first choice
        pair = [(files.read("key"), files.read("cert"))]
        server.add_secure_port(address, grpc.ssl_server_credentials(pair))
    else:
        server.add_insecure_port(address)
    await server.start()
    config.ready.set()
    try:
        await server.wait_for_termination()
    finally:
        await server.stop(grace=1)


class GrpcClients:
    def __init__(self, services: Sequence[ServiceDef], addresses: dict[str, str]):
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._calls: dict[tuple[str, str], Any] = {}
        files = tls.client_files()
        options = _CHANNEL_OPTIONS + reconnect.grpc_channel_options()
        for s in services:
            if files is not None:  # one channel, so one handshake, per service
                credentials = grpc.ssl_channel_credentials(root_certificates=files.read("ca"))
                channel = grpc.aio.secure_channel(addresses[s.name], credentials, options=options)
            else:
                channel = grpc.aio.insecure_channel(addresses[s.name], options=options)
            self._channels[s.name] = channel
            for op, o in s.ops.items():
                self._calls[s.name, op] = (
                    channel.unary_unary(
                        f"/{s.proto_service}/{_method(s, op)}",
                        request_serializer=o.request.SerializeToString,
                        response_deserializer=o.response.FromString,
                    ),
                    o.request,
                )

    async def call(
        self, service: str, op: str, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        stub, request_cls = self._calls[service, op]
        try:
            msg = from_dict(request_cls, request)
        except (TypeError, ValueError) as e:
            raise BadRequest(str(e)) from None
        try:
            reply = await stub(msg, timeout=timeout)
        except grpc.aio.AioRpcError as e:
            cls = _FROM_STATUS.get(e.code(), ServiceError)
            raise cls(f"{service}: {e.details()}") from None
        return to_dict(reply)

    def stats(self) -> dict[str, Any]:
        return {}

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()


async def connect(services: Sequence[ServiceDef], config: ConnectConfig) -> GrpcClients:
    return GrpcClients(services, {s.name: config.addresses[s.name] for s in services})
