// Command pause is the first process of every pod sandbox (the image ipclab-pause:1, the
// private containerd's sandbox_image): it holds the pod's namespaces, reaps the zombies of
// the processes that end up its children, and exits 0 on SIGINT or SIGTERM. No registry is
// reachable here, so the upstream registry.k8s.io/pause image cannot be pulled; this is the
// same behaviour (upstream's build/pause/linux/pause.c), written in Go and built static
// (CGO_ENABLED=0) so that a FROM-scratch image needs nothing else.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const version = "ipclab-pause 1"

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Println(version)
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pause: warning: not pid 1, so it reaps only its own children")
	}
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "pause: shutting down, got %v\n", s)
		os.Exit(0)
	}
}

// reap collects every child that has ended (several SIGCHLD may arrive as one).
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
