package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	apiapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	apioptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	ctrlapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	ctrloptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

func runAPIServer(ctx context.Context, o options, f clusterFiles, etcdURL string) error {
	// Both option constructors register the kube component in one shared registry only once,
	// so the API server and the controller manager can live in one process.
	s := apioptions.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, set := range s.Flags().FlagSets {
		fs.AddFlagSet(set)
	}
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + o.bindAddress,
		"--advertise-address=" + o.bindAddress,
		fmt.Sprintf("--secure-port=%d", o.port),
		"--cert-dir=" + f.certDir,
		"--authorization-mode=RBAC",
		"--token-auth-file=" + f.tokenFile,
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + f.serviceAcctKey,
		"--service-account-signing-key-file=" + f.serviceAcctKey,
		"--api-audiences=" + serviceAccountIssuer,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-priority-and-fairness=false",
		"--v=0",
	}
	if o.workloads {
		// Pods reach the API server through the kubernetes Service, whose endpoint is the
		// advertised address; the kubelet is reached at its node's InternalIP (its hostname
		// resolves nowhere).
		args = append(args, "--endpoint-reconciler-type=lease", "--kubelet-preferred-address-types=InternalIP")
	} else {
		// The default reconciler would publish 127.0.0.1 as the kubernetes Service endpoint,
		// which Endpoints validation refuses; nothing here needs that Service.
		args = append(args, "--endpoint-reconciler-type=none")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return err
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return utilerrors.NewAggregate(errs)
	}
	return apiapp.Run(ctx, completed)
}

// controllerManager runs only the controllers tests rely on: owner references cascade,
// namespaces finish deleting, and every namespace gets a default ServiceAccount.
type controllerManager struct {
	options *ctrloptions.KubeControllerManagerOptions
}

// newControllerManager parses the controller manager's flags. It must run before the API server
// adds the shared feature gates to its flag set: after that, gate defaults can no longer change.
func newControllerManager(kubeconfig string, f clusterFiles, workloads bool) (*controllerManager, error) {
	s, err := ctrloptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, set := range s.Flags(ctrlapp.KnownControllers(), ctrlapp.ControllersDisabledByDefault(), ctrlapp.ControllerAliases()).FlagSets {
		fs.AddFlagSet(set)
	}
	controllers := "garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller"
	if workloads {
		// What a node's workloads need: Deployments, StatefulSets and Jobs (the chart's uninstall
		// hook) make pods, Services get endpoints, PersistentVolumeClaims bind to the node's local
		// volumes, finished pods go, and every namespace gets kube-root-ca.crt for the pods'
		// ServiceAccount tokens.
		controllers += ",deployment-controller,replicaset-controller,statefulset-controller,job-controller,endpoints-controller,endpointslice-controller," +
			"persistentvolume-binder-controller,persistentvolume-protection-controller,persistentvolumeclaim-protection-controller," +
			"pod-garbage-collector-controller,root-ca-certificate-publisher-controller,disruption-controller"
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + controllers,
		"--leader-elect=false",
		"--secure-port=0",
		"--service-account-private-key-file=" + f.serviceAcctKey,
		"--root-ca-file=" + filepath.Join(f.certDir, "apiserver.crt"),
		"--v=0",
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return &controllerManager{options: s}, nil
}

// run starts the controllers once the kubeconfig it was given exists.
func (m *controllerManager) run(ctx context.Context) error {
	c, err := m.options.Config(ctx, ctrlapp.KnownControllers(), ctrlapp.ControllersDisabledByDefault(), ctrlapp.ControllerAliases())
	if err != nil {
		return err
	}
	return ctrlapp.Run(ctx, c.Complete())
}

// waitReady polls /readyz with the admin token until it answers 200.
func waitReady(ctx context.Context, host string, port int, token string, failed <-chan error) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback readiness probe of a self-signed test server
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-failed:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s:%d/readyz", host, port), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if res, err := client.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("not ready after 120 s")
}
