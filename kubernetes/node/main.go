// Command ipclab-k8s is a single-node Kubernetes in one binary (docs/kubernetes.md): the
// name it is invoked by (a symlink, as busybox) or its first argument picks the component,
// the remaining arguments are that component's own flags.
//
// One component per process: the upstream commands set up process-wide signal handling
// (SetupSignalContext may be called once per process), flags, feature gates and metrics
// registries, so running two in one process would need patches to Kubernetes; a dispatch
// like this needs none (the old hyperkube did the same).
//
// UNVERIFIED until the first build: the constructors' signatures in k8s.io/kubernetes
// v1.34.4 (NewKubeletCommand takes a context since 1.32, NewSchedulerCommand takes options);
// `go doc k8s.io/kubernetes/cmd/kubelet/app NewKubeletCommand` after `go mod tidy` shows
// them, and the compiler flags any mismatch.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	_ "time/tzdata" // CronJob time zones, as the upstream apiserver and controller-manager mains

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric

	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// components are the upstream commands, each built as its upstream main builds it.
var components = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kube-proxy":              proxy.NewProxyCommand,
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
}

func main() {
	name, args := filepath.Base(os.Args[0]), os.Args[1:]
	if _, ok := components[name]; !ok && name != "etcd" {
		if len(args) == 0 {
			usage()
		}
		name, args = args[0], args[1:]
	}
	if name == "etcd" {
		os.Exit(runEtcd(args))
	}
	newCommand, ok := components[name]
	if !ok {
		usage()
	}
	os.Args = append([]string{name}, args...) // what the component's own main would see
	command := newCommand()
	command.SetArgs(args)
	os.Exit(cli.Run(command))
}

func usage() {
	names := []string{"etcd"}
	for name := range components {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: ipclab-k8s %s [flags]\n", strings.Join(names, "|"))
	os.Exit(2)
}
