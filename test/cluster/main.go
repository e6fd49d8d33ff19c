// Command testcluster runs a real Kubernetes control plane in one process for intake's tests:
// embedded etcd, kube-apiserver (RBAC, token auth, ServiceAccount tokens, CRDs) and the
// garbage-collector, namespace and serviceaccount controllers of kube-controller-manager.
// Everything listens on loopback. It writes an admin kubeconfig and exits cleanly on SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

type options struct {
	dataDir       string
	port          int
	etcdPort      int
	kubeconfigOut string
	bindAddress   string
	workloads     bool
}

func main() {
	var o options
	flag.StringVar(&o.dataDir, "data-dir", ".testcluster", "where etcd data, keys, certificates and the token file live")
	flag.IntVar(&o.port, "port", 6443, "kube-apiserver secure port on 127.0.0.1")
	flag.IntVar(&o.etcdPort, "etcd-port", 0, "etcd client port on 127.0.0.1 (default: port+10000; the peer port is one above)")
	flag.StringVar(&o.kubeconfigOut, "kubeconfig-out", "", "where to write the admin kubeconfig (default: <data-dir>/kubeconfig)")
	flag.StringVar(&o.bindAddress, "bind-address", "127.0.0.1", "the one address kube-apiserver listens on and advertises (a node's pods reach it there)")
	flag.BoolVar(&o.workloads, "workloads", false, "also run the controllers a node's workloads need (deployments, statefulsets, jobs, endpoints, volume binding)")
	flag.Parse()
	if o.etcdPort == 0 {
		o.etcdPort = o.port + 10000
	}
	if o.kubeconfigOut == "" {
		o.kubeconfigOut = filepath.Join(o.dataDir, "kubeconfig")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "testcluster: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return err
	}
	files, err := prepareFiles(o.dataDir)
	if err != nil {
		return err
	}
	kcm, err := newControllerManager(o.kubeconfigOut, files, o.workloads)
	if err != nil {
		return fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	etcd, err := startEtcd(filepath.Join(o.dataDir, "etcd"), o.etcdPort)
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()

	apiErr := make(chan error, 1)
	go func() { apiErr <- runAPIServer(ctx, o, files, etcd.clientURL) }()
	if err := waitReady(ctx, o.bindAddress, o.port, files.adminToken, apiErr); err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	if err := writeKubeconfig(o.kubeconfigOut, o.bindAddress, o.port, files); err != nil {
		return err
	}
	kcmErr := make(chan error, 1)
	go func() { kcmErr <- kcm.run(ctx) }()
	klog.Infof("testcluster ready: https://%s:%d, kubeconfig %s", o.bindAddress, o.port, o.kubeconfigOut)

	select {
	case <-ctx.Done():
	case err := <-apiErr:
		return fmt.Errorf("kube-apiserver stopped: %w", err)
	case err := <-kcmErr:
		return fmt.Errorf("kube-controller-manager stopped: %w", err)
	}
	// Give the servers a moment to drain; etcd closes on return.
	select {
	case <-apiErr:
	case <-time.After(5 * time.Second):
	}
	return nil
}
