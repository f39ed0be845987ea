package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Clients calls every service of a stack over one transport (transports/base.py Clients).
// Call decodes a "get" answer into out (a *Product, *reviewsDoc, ...); a "ping" has out nil.
type Clients interface {
	Call(ctx context.Context, service, op string, id int64, out any) error
	Stats() any
	Close()
}

// The answer order of gateway.py's _PRECEDENCE: the most telling error first.
var precedence = []string{"bad_request", "not_found", "timeout", "unavailable", "internal"}

func worst(errs []*ServiceError) *ServiceError {
	for _, code := range precedence {
		for _, e := range errs {
			if e.Code == code {
				return e
			}
		}
	}
	return errs[0]
}

type page struct {
	Product         *Product         `json:"product"`
	Reviews         []Review         `json:"reviews"`
	Recommendations []Recommendation `json:"recommendations"`
	Shipping        []ShippingOption `json:"shipping"`
	Cart            *Cart            `json:"cart"`
}

type gateway struct {
	clients    Clients
	services   []string
	timeout    time.Duration
	sequential bool
}

func (g *gateway) call(service, op string, id int64, out any, limit time.Duration) *ServiceError {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := g.clients.Call(ctx, service, op, id, out); err != nil {
		return asServiceError(err)
	}
	return nil
}

func (g *gateway) productPage(productID, customerID int64) (*page, *ServiceError) {
	var (
		info  Product
		revs  reviewsDoc
		recs  recommendationsDoc
		ship  shippingDoc
		cartD cartDoc
	)
	calls := []struct {
		service string
		id      int64
		out     any
	}{
		{"product-info", productID, &info},
		{"reviews", productID, &revs},
		{"recommendations", productID, &recs},
		{"shipping", productID, &ship},
		{"cart", customerID, &cartD},
	}
	var errs []*ServiceError
	if g.sequential {
		for _, c := range calls {
			if err := g.call(c.service, "get", c.id, c.out, g.timeout); err != nil {
				errs = append(errs, err)
				break
			}
		}
	} else {
		results := make([]*ServiceError, len(calls))
		var wg sync.WaitGroup
		for i, c := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = g.call(c.service, "get", c.id, c.out, g.timeout)
			}()
		}
		wg.Wait()
		for _, e := range results {
			if e != nil {
				errs = append(errs, e)
			}
		}
	}
	if len(errs) > 0 {
		return nil, worst(errs)
	}
	return &page{&info, revs.Reviews, recs.Recommendations, ship.Options, cartD.Cart}, nil
}

// health pings every service at once, each within min(timeout, 1 s).
func (g *gateway) health() (int, any) {
	limit := min(g.timeout, time.Second)
	status := make([]string, len(g.services))
	var wg sync.WaitGroup
	for i, s := range g.services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.call(s, "ping", 0, nil, limit); err != nil {
				status[i] = err.TypeName()
			} else {
				status[i] = "ok"
			}
		}()
	}
	wg.Wait()
	ready := true
	var services bytes.Buffer // in the stack's order, as the Python gateway writes it
	services.WriteByte('{')
	for i, s := range g.services {
		ready = ready && status[i] == "ok"
		if i > 0 {
			services.WriteByte(',')
		}
		fmt.Fprintf(&services, "%q:%q", s, status[i])
	}
	services.WriteByte('}')
	code := 200
	if !ready {
		code = 503
	}
	return code, struct {
		Ready    bool            `json:"ready"`
		Services json.RawMessage `json:"services"`
	}{ready, services.Bytes()}
}

// parseID is gateway.py's _parse_id: ASCII digits only, at most 18 of them.
func parseID(text string, present bool, what string) (int64, *ServiceError) {
	ok := present && text != "" && len(text) <= 18
	for _, r := range text {
		ok = ok && r >= '0' && r <= '9'
	}
	if !ok {
		shown := "None"
		if present {
			shown = strconv.Quote(text)
		}
		return 0, &ServiceError{"bad_request", what + " must be a non-negative integer, got " + shown}
	}
	id, _ := strconv.ParseInt(text, 10, 64)
	return id, nil
}

func errorDoc(e *ServiceError) (int, any) {
	return e.Status(), map[string]string{"error": e.Code, "message": e.Message}
}

// refuseMethod answers a request other than GET as the Python front does: its body read
// up to maxBody (413 beyond, as fronts/http_json.py), then 405.
func refuseMethod(w http.ResponseWriter, r *http.Request) (int, any) {
	_, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return 413, map[string]string{"error": "too_large", "message": "body too large"}
	case err != nil:
		return 400, map[string]string{"error": "bad_request", "message": "the body could not be read"}
	}
	return 405, map[string]string{"error": "method_not_allowed"}
}

func (g *gateway) route(w http.ResponseWriter, r *http.Request) (int, any) {
	if r.Method != http.MethodGet {
		return refuseMethod(w, r)
	}
	var parts []string
	for _, p := range strings.Split(r.URL.Path, "/") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	switch {
	case len(parts) == 2 && parts[0] == "product":
		productID, err := parseID(parts[1], true, "product_id")
		if err != nil {
			return errorDoc(err)
		}
		var customerID int64
		if values := r.URL.Query()["customer_id"]; len(values) > 0 && values[len(values)-1] != "" {
			if customerID, err = parseID(values[len(values)-1], true, "customer_id"); err != nil {
				return errorDoc(err)
			}
		}
		doc, err := g.productPage(productID, customerID)
		if err != nil {
			return errorDoc(err)
		}
		return 200, doc
	case len(parts) == 1 && parts[0] == "healthz":
		return g.health()
	case len(parts) == 1 && parts[0] == "stats":
		return 200, g.clients.Stats()
	}
	return 404, map[string]string{"error": "not_found", "message": "no such path"}
}

// encode writes compact JSON without HTML escaping, as orjson does.
func encode(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(`{"error":"internal","message":"encoding"}`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

func writeJSON(w http.ResponseWriter, status int, body []byte, extra map[string]string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	for k, v := range extra {
		h.Set(k, v)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// serveGateway is the http_json front: the gateway's answers with a Server-Timing header.
func serveGateway(g *gateway, addr string) error {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		status, doc := g.route(w, r)
		body := encode(doc)
		took := fmt.Sprintf("app;dur=%.3f", float64(time.Since(t0).Microseconds())/1000)
		writeJSON(w, status, body, map[string]string{"Server-Timing": took})
	})
	return listen(newServer(addr, handler))
}
