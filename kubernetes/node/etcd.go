package main

// etcd 3.6.4 embedded (go.etcd.io/etcd/server/v3/embed), the version k8s.io/kubernetes
// v1.34.4's own go.mod selects: Debian's etcd-server 3.4.23 is below what the apiserver's
// consistent reads from its watch cache need (RequestWatchProgress: 3.4.31+ / 3.5.13+).
// Plain HTTP on loopback only, in a process of its own (`ipclab-k8s etcd`), its data
// thrown away with the cluster: hence no fsync (no disk-flush jitter during measurements).
//
// UNVERIFIED until the first build: the embed.Config field names below were read in
// server/embed/config.go of the 3.5/3.6 line, not compiled against v3.6.4.

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ExitOnError)
	dir := fs.String("data-dir", "", "data directory (required)")
	client := fs.String("listen-client-url", "http://127.0.0.1:23790", "the clients' URL (loopback)")
	peer := fs.String("listen-peer-url", "http://127.0.0.1:23800", "the peer URL (loopback; no peers)")
	noFsync := fs.Bool("unsafe-no-fsync", true, "disposable state: no fsync")
	_ = fs.Parse(args)
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir is required")
		return 2
	}
	clientURL, err := url.Parse(*client)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd:", err)
		return 2
	}
	peerURL, err := url.Parse(*peer)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd:", err)
		return 2
	}
	server, err := embed.StartEtcd(etcdConfig(*dir, *clientURL, *peerURL, *noFsync))
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd:", err)
		return 1
	}
	defer server.Close()
	select {
	case <-server.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "etcd: not ready after 60 s")
		return 1
	}
	stop := make(chan os.Signal, 1)
	// our own handler: a process started in the background has SIGINT ignored
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-stop:
		return 0
	case err := <-server.Err():
		fmt.Fprintln(os.Stderr, "etcd:", err)
		return 1
	}
}

func etcdConfig(dir string, client, peer url.URL, noFsync bool) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = "ipclab"
	cfg.Dir = dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{"stderr"}
	cfg.UnsafeNoFsync = noFsync
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"
	cfg.QuotaBackendBytes = 2 << 30
	return cfg
}
