'use strict';
// ServiceError crosses every transport with the same meaning as services/errors.py
// (services/go/errors.go): a code, an HTTP status, the Python class name /healthz shows.

const STATUS = { not_found: 404, bad_request: 400, unavailable: 503, timeout: 504 };
const TYPE_NAME = {
  not_found: 'NotFound',
  bad_request: 'BadRequest',
  unavailable: 'Unavailable',
  timeout: 'Timeout',
};
// gateway.py's _PRECEDENCE: the most telling error first
const PRECEDENCE = ['bad_request', 'not_found', 'timeout', 'unavailable', 'internal'];

class ServiceError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }

  get status() {
    return STATUS[this.code] || 500;
  }

  get typeName() {
    return TYPE_NAME[this.code] || 'ServiceError';
  }
}

const badRequest = (m) => new ServiceError('bad_request', m);
const notFound = (m) => new ServiceError('not_found', m);
const unavailable = (m) => new ServiceError('unavailable', m);
const timeout = (m) => new ServiceError('timeout', m);

// errors.from_code: an unknown code is a plain internal error
function fromCode(code, message) {
  const known = code in STATUS;
  return new ServiceError(known ? code : 'internal', message || (known ? code : 'internal'));
}

function asServiceError(err) {
  return err instanceof ServiceError ? err : new ServiceError('internal', String(err && err.message));
}

function worst(errors) {
  for (const code of PRECEDENCE) {
    const e = errors.find((x) => x.code === code);
    if (e) return e;
  }
  return errors[0];
}

module.exports = {
  ServiceError, badRequest, notFound, unavailable, timeout, fromCode, asServiceError, worst,
};
