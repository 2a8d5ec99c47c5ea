// Command kube-apiserver-etcd is a test-only binary: it starts an embedded etcd
// server on loopback and then runs the real kube-apiserver command against it.
//
// Usage:
//
//	kube-apiserver-etcd --etcd-data-dir=DIR --etcd-client-port=N --etcd-peer-port=M -- <kube-apiserver flags...>
//
// Everything after "--" is handed unchanged to kube-apiserver. The process ends
// when kube-apiserver ends (SIGTERM/SIGINT make it shut down gracefully; with
// --exit-on-stdin-eof, so does closing standard input), or when etcd fails;
// etcd is closed before exiting.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"syscall"
	"time"
	_ "time/tzdata" // for timeZone support in CronJob, as in kube-apiserver's own main

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go prometheus plugins
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric registration
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("kube-apiserver-etcd", flag.ContinueOnError)
	dataDir := fs.String("etcd-data-dir", "", "data directory of the embedded etcd (required)")
	clientPort := fs.Int("etcd-client-port", 2379, "loopback port on which etcd serves clients")
	peerPort := fs.Int("etcd-peer-port", 2380, "loopback port on which etcd listens for peers")
	etcdLogLevel := fs.String("etcd-log-level", "error", "log level of the embedded etcd")
	exitOnStdinEOF := fs.Bool("exit-on-stdin-eof", false,
		"shut down when standard input closes, so that the server never outlives the process that started it")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "kube-apiserver-etcd: --etcd-data-dir is required")
		return 2
	}

	etcd, err := startEtcd(*dataDir, *clientPort, *peerPort, *etcdLogLevel)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube-apiserver-etcd: starting etcd: %v\n", err)
		return 1
	}
	defer etcd.Close()

	if *exitOnStdinEOF {
		go shutdownOnStdinEOF()
	}

	result := make(chan int, 1)
	go func() {
		command := app.NewAPIServerCommand()
		command.SetArgs(fs.Args())
		result <- cli.Run(command)
	}()

	select {
	case code := <-result:
		return code
	case err := <-etcd.Err():
		fmt.Fprintf(os.Stderr, "kube-apiserver-etcd: etcd failed: %v\n", err)
		return 1
	}
}

// shutdownOnStdinEOF waits until standard input is closed (the parent went away
// or asked for a stop), then sends SIGTERM to this process so kube-apiserver
// shuts down gracefully; if that takes too long, the process exits anyway.
func shutdownOnStdinEOF() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	time.Sleep(20 * time.Second)
	fmt.Fprintln(os.Stderr, "kube-apiserver-etcd: no graceful shutdown within 20s, exiting")
	os.Exit(1)
}

func startEtcd(dataDir string, clientPort, peerPort int, logLevel string) (*embed.Etcd, error) {
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}

	cfg := embed.NewConfig()
	cfg.Name = "fogbridge-test"
	cfg.Dir = dataDir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.Logger = "zap"
	cfg.LogLevel = logLevel
	// Throw-away data of a test server: durability is not needed, speed is.
	cfg.UnsafeNoFsync = true

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("etcd was not ready within 60s")
	}
}
