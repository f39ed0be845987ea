package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// runBench is the client half of a Go row of bench/transports.py (IPCLAB_ROLE=bench), the
// same procedure as its Python client (transports.py's measure): warm-up (min(200,
// max(20, requests/10)) calls, then 5 bursts of IPCLAB_BENCH_INFLIGHT at once),
// IPCLAB_BENCH_REQUESTS calls one at a time (p50, p99), then IPCLAB_BENCH_INFLIGHT calls in
// flight for IPCLAB_BENCH_SECONDS; CPU seconds of this process (getrusage) and of the pids
// in IPCLAB_BENCH_SERVER_PIDS and IPCLAB_BENCH_BROKER_PIDS (/proc/<pid>/stat, as psutil)
// over the throughput phase. Calls: "get" of product 1 to one service through this
// binary's clients, or (IPCLAB_TRANSPORT=echo, the floor) the bytes of the file
// IPCLAB_BENCH_PAYLOAD, length-prefixed, over one TCP connection per call in flight.
// One JSON line on stdout.
func runBench(transport, amqpURL string) error {
	service := env("IPCLAB_BENCH_SERVICE", "product-info")
	requests := int(envInt("IPCLAB_BENCH_REQUESTS", "2000"))
	inflight := int(envInt("IPCLAB_BENCH_INFLIGHT", "32"))
	seconds, _ := strconv.ParseFloat(env("IPCLAB_BENCH_SECONDS", "3"), 64)
	call, closeCalls, err := benchCall(transport, service, amqpURL, inflight)
	if err != nil {
		return err
	}
	defer closeCalls()
	if err := warmUp(call, requests, inflight); err != nil {
		return err
	}
	lat, err := sequentialLatencies(call, requests)
	if err != nil {
		return err
	}
	server, broker := pids("IPCLAB_BENCH_SERVER_PIDS"), pids("IPCLAB_BENCH_BROKER_PIDS")
	t := throughput(call, inflight, seconds, server, broker)
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"seq_p50_us":   percentile(lat, 50),
		"seq_p99_us":   percentile(lat, 99),
		"done":         t.done,
		"errors":       t.failed,
		"first_error":  t.firstError,
		"elapsed_s":    t.elapsed,
		"client_cpu_s": t.clientCPU,
		"server_cpu_s": t.serverCPU,
		"broker_cpu_s": t.brokerCPU,
	})
}

// benchCall is one call of the benchmark and what closes its connections: the echo floor's
// length-prefixed bytes, or a "get" of product 1 through this binary's clients.
func benchCall(transport, service, amqpURL string, inflight int) (func() error, func(), error) {
	if transport == "echo" {
		return echoClient(os.Getenv(addrEnv(service)), inflight)
	}
	clients, err := connect(transport, []string{service}, amqpURL)
	if err != nil {
		return nil, nil, err
	}
	call := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var p Product
		return clients.Call(ctx, service, "get", 1, &p)
	}
	return call, clients.Close, nil
}

// warmUp makes min(200, max(20, requests/10)) calls one at a time, then 5 bursts of
// inflight calls at once (so that every connection the throughput phase uses is open).
func warmUp(call func() error, requests, inflight int) error {
	for i := 0; i < min(200, max(20, requests/10)); i++ {
		if err := call(); err != nil {
			return err
		}
	}
	for b := 0; b < 5; b++ {
		var wg sync.WaitGroup
		errs := make(chan error, inflight)
		for i := 0; i < inflight; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- call() }()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// sequentialLatencies times requests calls made one at a time, in microseconds, sorted.
func sequentialLatencies(call func() error, requests int) ([]float64, error) {
	lat := make([]float64, requests)
	for i := range lat {
		t0 := time.Now()
		if err := call(); err != nil {
			return nil, err
		}
		lat[i] = float64(time.Since(t0).Nanoseconds()) / 1e3
	}
	sort.Float64s(lat)
	return lat, nil
}

// throughputResult is what the throughput phase measured.
type throughputResult struct {
	done, failed                    int64
	firstError                      string
	elapsed                         float64
	clientCPU, serverCPU, brokerCPU float64
}

// throughput keeps inflight calls in flight for seconds and counts them, with the CPU
// seconds of this process and of the server and broker pids over the phase.
func throughput(call func() error, inflight int, seconds float64, server, broker []int) throughputResult {
	var done, failed atomic.Int64
	var firstError atomic.Value
	stop := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var wg sync.WaitGroup
	c0, s0, b0 := cpuSeconds(), procCPU(server), procCPU(broker)
	t0 := time.Now()
	for w := 0; w < inflight; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if err := call(); err != nil {
					failed.Add(1)
					firstError.CompareAndSwap(nil, err.Error())
				} else {
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0).Seconds()
	c1, s1, b1 := cpuSeconds(), procCPU(server), procCPU(broker)
	first, _ := firstError.Load().(string)
	return throughputResult{
		done: done.Load(), failed: failed.Load(), firstError: first, elapsed: elapsed,
		clientCPU: c1 - c0, serverCPU: s1 - s0, brokerCPU: b1 - b0,
	}
}

// percentile as numpy's default (linear interpolation between closest ranks).
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q / 100 * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}

func pids(key string) []int {
	var out []int
	for _, s := range strings.Split(os.Getenv(key), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// procCPU is the user + system CPU seconds of the pids (those still alive), read from
// /proc/<pid>/stat in clock ticks (USER_HZ, 100 on Linux), as psutil reads them.
func procCPU(pids []int) float64 {
	total := 0.0
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 13 {
			continue
		}
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		total += (utime + stime) / 100
	}
	return total
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// serveEcho is the Go floor's server: every length-prefixed frame is written back as it came
// (bench/transports.py's asyncio echo, in Go).
func serveEcho(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		conn, err := ln.Accept()
		if err != nil {
			return err
		}
		go func(c net.Conn) {
			defer c.Close()
			r := bufio.NewReader(c)
			buf := make([]byte, 4, 4096)
			for {
				if _, err := io.ReadFull(r, buf[:4]); err != nil {
					return
				}
				n := int(binary.BigEndian.Uint32(buf[:4]))
				if cap(buf) < 4+n {
					buf = append(buf[:4], make([]byte, n)...)
				}
				buf = buf[:4+n]
				if _, err := io.ReadFull(r, buf[4:]); err != nil {
					return
				}
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}(conn)
	}
}

// echoClient: one connection per call in flight, taken from a pool for each call, as the
// Python floor's client does.
func echoClient(addr string, inflight int) (func() error, func(), error) {
	body, err := os.ReadFile(os.Getenv("IPCLAB_BENCH_PAYLOAD"))
	if err != nil {
		return nil, nil, err
	}
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	frame = append(frame, body...)
	type conn struct {
		c net.Conn
		r *bufio.Reader
	}
	pool := make(chan conn, inflight)
	var all []net.Conn
	for i := 0; i < inflight; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, c)
		pool <- conn{c, bufio.NewReader(c)}
	}
	closeAll := func() {
		for _, c := range all {
			_ = c.Close()
		}
	}
	call := func() error {
		k := <-pool
		defer func() { pool <- k }()
		if _, err := k.c.Write(frame); err != nil {
			return err
		}
		var head [4]byte
		if _, err := io.ReadFull(k.r, head[:]); err != nil {
			return err
		}
		reply := make([]byte, binary.BigEndian.Uint32(head[:]))
		_, err := io.ReadFull(k.r, reply)
		return err
	}
	return call, closeAll, nil
}
