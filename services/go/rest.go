package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// poolPerHost is rest.py's POOL_PER_HOST: keep-alive connections per service (Go's default,
// DefaultMaxIdleConnsPerHost 2, would close all but 2 idle connections per service after
// every burst, and the next burst would open them again).
const poolPerHost = 100

// poolIdle is rest.py's POOL_IDLE_S: an idle pooled connection is closed after this, well
// before a server closes it (idleTimeout), so no request is sent on a connection the server
// is closing. TCP_NODELAY (on) and TCP keep-alive (15 s) are Go's defaults for every
// connection of the zero net.Dialer (ipclab.socket_settings states them; tests check them).
const poolIdle = 15 * time.Second

// serveREST answers GET /{op}?{field}={value} with the operation's JSON document, or an
// error document {"error", "message"} with the matching status (transports/rest.py).
func serveREST(f *Fixture, service, addr string) error {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet { // as asgi.json_app: the body is not read
			writeJSON(w, 405, encode(map[string]string{"error": "method_not_allowed"}), nil)
			return
		}
		op := strings.Trim(r.URL.Path, "/")
		if op != "get" && op != "ping" {
			writeJSON(w, 404, encode(map[string]string{"error": "no_such_operation", "message": op}), nil)
			return
		}
		doc, err := invoke(f, service, op, r.URL.Query())
		if err != nil {
			status, body := errorDoc(asServiceError(err))
			writeJSON(w, status, encode(body), nil)
			return
		}
		writeJSON(w, 200, encode(doc), nil)
	})
	return listen(newServer(addr, handler))
}

// invoke runs one operation on a request given as strings (services.py's _id rules).
func invoke(f *Fixture, service, op string, request url.Values) (any, error) {
	if op == "ping" {
		return struct{}{}, nil
	}
	key := serviceKey(service)
	value, present := request[key]
	if !present {
		return nil, badRequest(key + " must be an integer, got None")
	}
	id, err := strconv.ParseInt(strings.TrimSpace(value[len(value)-1]), 10, 64)
	if err != nil {
		return nil, badRequest(fmt.Sprintf("%s must be an integer, got %q", key, value[len(value)-1]))
	}
	if id < 0 {
		return nil, badRequest(key + " must not be negative")
	}
	return f.answer(service, id)
}

type restClients struct {
	base   map[string]string
	client *http.Client
}

func newRESTClients(addresses map[string]string) *restClients {
	base := map[string]string{}
	for s, a := range addresses {
		base[s] = httpScheme() + "://" + a
	}
	transport := &http.Transport{
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: poolPerHost,
		MaxConnsPerHost:     poolPerHost,
		IdleConnTimeout:     poolIdle,
	}
	if clientTLSOn() { // a handshake per pooled connection; HTTP/1.1 (no h2 asked for)
		transport.TLSClientConfig = clientTLS()
	}
	return &restClients{base, &http.Client{Transport: transport}}
}

func (c *restClients) Call(ctx context.Context, service, op string, id int64, out any) error {
	u := c.base[service] + "/" + op
	if op == "get" {
		u += "?" + serviceKey(service) + "=" + strconv.FormatInt(id, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return &ServiceError{"internal", err.Error()}
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return timeout(fmt.Sprintf("%s did not answer within %v", service, deadlineOf(ctx)))
		}
		return unavailable(fmt.Sprintf("%s: %v", service, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return timeout(fmt.Sprintf("%s did not answer within %v", service, deadlineOf(ctx)))
		}
		return unavailable(fmt.Sprintf("%s: %v", service, err))
	}
	if len(body) > maxAnswer {
		return &ServiceError{"internal", fmt.Sprintf("%s: an answer longer than %d bytes", service, maxAnswer)}
	}
	if resp.StatusCode != 200 {
		var doc struct{ Error, Message string }
		if json.Unmarshal(body, &doc) != nil {
			return &ServiceError{"internal", fmt.Sprintf("%s: HTTP %d with a non-JSON body", service, resp.StatusCode)}
		}
		if doc.Error == "" {
			doc.Error = "internal"
		}
		return fromCode(doc.Error, doc.Message)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &ServiceError{"internal", fmt.Sprintf("%s: HTTP 200 with a bad body: %v", service, err)}
	}
	return nil
}

func deadlineOf(ctx context.Context) string {
	if d, ok := ctx.Deadline(); ok {
		return "the deadline " + d.Format(time.RFC3339Nano)
	}
	return "the deadline"
}

func (c *restClients) Stats() any { return struct{}{} }
func (c *restClients) Close()     { c.client.CloseIdleConnections() }
