package main

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// runBench is the client half of bench/transports_go.py (IPCLAB_ROLE=bench): calls to one
// service's "get" (product 1) through this binary's clients, sequential then with
// IPCLAB_BENCH_INFLIGHT calls in flight for IPCLAB_BENCH_SECONDS; one JSON line on stdout.
func runBench(transport, amqpURL string) error {
	service := env("IPCLAB_BENCH_SERVICE", "product-info")
	requests := int(envInt("IPCLAB_BENCH_REQUESTS", "2000"))
	inflight := int(envInt("IPCLAB_BENCH_INFLIGHT", "32"))
	seconds, _ := strconv.ParseFloat(env("IPCLAB_BENCH_SECONDS", "3"), 64)
	clients, err := connect(transport, []string{service}, amqpURL)
	if err != nil {
		return err
	}
	defer clients.Close()
	call := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var p Product
		return clients.Call(ctx, service, "get", 1, &p)
	}
	for i := 0; i < 200; i++ { // warm-up: connections, pools, JIT-free but caches
		if err := call(); err != nil {
			return err
		}
	}
	lat := make([]float64, requests)
	for i := range lat {
		t0 := time.Now()
		if err := call(); err != nil {
			return err
		}
		lat[i] = float64(time.Since(t0).Nanoseconds()) / 1e6
	}
	sort.Float64s(lat)
	cpu0 := cpuSeconds()
	var done, failed atomic.Int64
	stop := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := 0; w < inflight; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if call() != nil {
					failed.Add(1)
				} else {
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0).Seconds()
	clientCPU := cpuSeconds() - cpu0
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"p50_ms":         lat[len(lat)/2],
		"p99_ms":         lat[len(lat)*99/100],
		"rps":            float64(done.Load()) / elapsed,
		"failed":         failed.Load(),
		"calls":          200 + requests + int(done.Load()),
		"client_cpu_pct": 100 * clientCPU / elapsed,
		"client_cpu_us":  1e6 * clientCPU / float64(max(done.Load(), 1)),
	})
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
