"""Errors that cross every transport with the same meaning.

Handlers raise ``NotFound``/``BadRequest``; each transport carries them to the caller, whose
client raises the same class. Transport trouble becomes ``Unavailable`` (the service cannot
be reached: 503 at the gateway) or ``Timeout`` (it did not answer in time: 504).
"""

from __future__ import annotations


class ServiceError(Exception):
    code = "internal"
    http_status = 500


class NotFound(ServiceError):
    code = "not_found"
    http_status = 404


class BadRequest(ServiceError):
    code = "bad_request"
    http_status = 400


class Unauthorized(ServiceError):
    code = "unauthorized"
    http_status = 401


class Forbidden(ServiceError):
    code = "forbidden"
    http_status = 403


class Unavailable(ServiceError):
    code = "unavailable"
    http_status = 503


class Timeout(ServiceError):
    code = "timeout"
    http_status = 504


BY_CODE: dict[str, type[ServiceError]] = {
    c.code: c
    for c in (ServiceError, NotFound, BadRequest, Unauthorized, Forbidden, Unavailable, Timeout)
}


def from_code(code: str, message: str = "") -> ServiceError:
    return BY_CODE.get(code, ServiceError)(message or code)
