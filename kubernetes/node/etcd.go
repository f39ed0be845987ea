package main

// etcd 3.6.4 embedded (go.etcd.io/etcd/server/v3/embed), the version k8s.io/kubernetes
// v1.34.4's own go.mod selects: Debian's etcd-server 3.4.23 is below what the apiserver's
// consistent reads from its watch cache need (RequestWatchProgress: 3.4.31+ / 3.5.13+).
// On loopback only, in a process of its own (`ipclab-k8s etcd`), its data thrown away with
// the cluster: hence no fsync (no disk-flush jitter during measurements).
//
// Mutual TLS on both ports, always (issue 48): etcd is where every object of the cluster
// lives, so a client that can write to it is root on the node (a privileged pod written
// straight into /registry/pods, past RBAC and admission). Both URLs must be https, the
// certificate, key and trusted CA (etcd's own authority, pki.py) given, and a client must
// present a certificate of that authority; anything else and etcd does not start. No CN
// allow-list: the authority signs two certificates only (etcd's and the API server's; its
// key is dropped), and etcd applies an allow-list to its own gRPC gateway's connection
// too, which dials without verifying and was refused ("client certificate authentication
// failed"), so every JSON request answered 503.

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ExitOnError)
	dir := fs.String("data-dir", "", "data directory (required)")
	client := fs.String("listen-client-url", "https://127.0.0.1:23790", "the clients' URL (loopback)")
	peer := fs.String("listen-peer-url", "https://127.0.0.1:23800", "the peer URL (loopback; no peers)")
	noFsync := fs.Bool("unsafe-no-fsync", true, "disposable state: no fsync")
	var tlsFiles etcdTLS
	fs.StringVar(&tlsFiles.cert, "cert-file", "", "etcd's certificate, for both ports (required)")
	fs.StringVar(&tlsFiles.key, "key-file", "", "its key (required)")
	fs.StringVar(&tlsFiles.ca, "trusted-ca-file", "", "the authority clients' certificates must have (required)")
	_ = fs.Parse(args)
	clientURL, peerURL, err := etcdURLs(*dir, *client, *peer, tlsFiles)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd:", err)
		return 2
	}
	server, err := embed.StartEtcd(etcdConfig(*dir, *clientURL, *peerURL, *noFsync, tlsFiles))
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

// etcdTLS is what mutual TLS needs: etcd's certificate and key, and the authority a
// client's certificate must come from.
type etcdTLS struct {
	cert, key, ca string
}

// etcdURLs checks the flags: a data directory, both URLs https, every TLS file.
func etcdURLs(dir, client, peer string, files etcdTLS) (*url.URL, *url.URL, error) {
	if dir == "" {
		return nil, nil, fmt.Errorf("--data-dir is required")
	}
	if files.cert == "" || files.key == "" || files.ca == "" {
		return nil, nil, fmt.Errorf("--cert-file, --key-file and --trusted-ca-file are required: no etcd without mutual TLS")
	}
	var urls [2]*url.URL
	for i, raw := range []string{client, peer} {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, nil, err
		}
		if u.Scheme != "https" {
			return nil, nil, fmt.Errorf("%s: not https; no etcd without mutual TLS", raw)
		}
		urls[i] = u
	}
	return urls[0], urls[1], nil
}

func (files etcdTLS) info() transport.TLSInfo {
	return transport.TLSInfo{
		CertFile:       files.cert,
		KeyFile:        files.key,
		TrustedCAFile:  files.ca,
		ClientCertAuth: true,
	}
}

func etcdConfig(dir string, client, peer url.URL, noFsync bool, files etcdTLS) *embed.Config {
	cfg := embed.NewConfig()
	cfg.ClientTLSInfo = files.info()
	cfg.PeerTLSInfo = files.info()
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
