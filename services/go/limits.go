package main

import (
	"net/http"
	"time"
)

// What every Go server grants one client: the values of services/limits.py (one place
// per language; tests/test_hardening.py checks that the two files agree), explained in
// docs/hardening.md.
const (
	maxBody        = 1 << 20  // bytes: a longer request body is refused with 413
	maxHeaderBytes = 64 << 10 // bytes: a longer request head is refused with 431
	headerTimeout  = 5 * time.Second
	readTimeout    = 30 * time.Second
	idleTimeout    = 75 * time.Second
	maxAnswer      = 16 << 20 // bytes: a longer service answer fails the call (internal)
)

// headerSlop is what net/http allows beyond Server.MaxHeaderBytes (its bufio slop): taken
// off, so that a head of more than maxHeaderBytes is refused, as in Python.
const headerSlop = 4096

// newServer is an http.Server with the limits: the head within headerTimeout (from the
// connection's start, then from each later request's first byte), the whole request
// within readTimeout, an idle keep-alive connection closed after idleTimeout.
func newServer(addr string, handler http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           handler,
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes - headerSlop,
	}
}
