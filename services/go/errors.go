package main

import "errors"

// ServiceError crosses every transport with the same meaning as services/errors.py.
type ServiceError struct {
	Code    string // not_found, bad_request, unavailable, timeout, internal
	Message string
}

func (e *ServiceError) Error() string { return e.Message }

// Status is the HTTP status the gateway answers for the error.
func (e *ServiceError) Status() int {
	switch e.Code {
	case "not_found":
		return 404
	case "bad_request":
		return 400
	case "unavailable":
		return 503
	case "timeout":
		return 504
	}
	return 500
}

// TypeName is the Python class name, as /healthz reports it.
func (e *ServiceError) TypeName() string {
	switch e.Code {
	case "not_found":
		return "NotFound"
	case "bad_request":
		return "BadRequest"
	case "unavailable":
		return "Unavailable"
	case "timeout":
		return "Timeout"
	}
	return "ServiceError"
}

func badRequest(m string) error  { return &ServiceError{"bad_request", m} }
func notFound(m string) error    { return &ServiceError{"not_found", m} }
func unavailable(m string) error { return &ServiceError{"unavailable", m} }
func timeout(m string) error     { return &ServiceError{"timeout", m} }

// fromCode is errors.from_code: an unknown code is a plain internal error.
func fromCode(code, message string) *ServiceError {
	switch code {
	case "not_found", "bad_request", "unavailable", "timeout":
	default:
		code = "internal"
	}
	if message == "" {
		message = code
	}
	return &ServiceError{code, message}
}

func asServiceError(err error) *ServiceError {
	var se *ServiceError
	if errors.As(err, &se) {
		return se
	}
	return &ServiceError{"internal", err.Error()}
}
