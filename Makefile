# intake: every developer and CI entry point. `make test` runs every test.
SHELL := /bin/bash
# The pinned Node LTS comes from the npm registry's `node` package (package.json devDependencies,
# .nvmrc): node_modules/.bin first, so every `node`, `npx` and script below runs on it, whatever
# Node the machine has.
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
JEST := env NODE_OPTIONS=--experimental-vm-modules node node_modules/jest/bin/jest.js

HELM_VERSION := v3.19.5
# The commit upstream's v3.19.5 tag points at (`git rev-parse v3.19.5^{commit}` in helm/helm):
# the release build stamps it into `helm version`.
HELM_GIT_COMMIT := 4a19a5b6fb912c5c28a779e73f2e0880d9e239a4
HELM := .tools/bin/helm
# Names the pinned version, so changing HELM_VERSION (or a checkout that has a helm built without
# the release ldflags) rebuilds it.
HELM_STAMP := .tools/bin/.helm-$(HELM_VERSION)-$(HELM_GIT_COMMIT)
NATS_SERVER_VERSION := v2.12.3
NATS_SERVER := .tools/bin/nats-server
# The OpenTelemetry Collector the tracing tests export to (test/otelcol: an OTLP receiver and the
# file exporter, the collector release pinned in its go.mod).
OTELCOL := .tools/bin/otelcol-intake

.PHONY: all deps tools debian-tools build image lint test test-unit test-e2e test-integration docs-screenshots test-cluster testcluster testcluster-stop testcluster-node testcluster-node-stop bench-build bench bench-operator bench-sizing clean

all: build

# npm ci only when the lockfile changed since the last install. A registry that stalls mid-download
# (EIDLETIMEOUT is not among the errors npm retries itself) gets two more tries after a pause.
node_modules/.package-lock.json: package-lock.json
	for attempt in 1 2 3; do npm ci --no-audit --no-fund && exit 0; echo "npm ci failed (attempt $$attempt of 3)" >&2; sleep $$((attempt * 10)); done; exit 1
deps: node_modules/.package-lock.json

# Tools the tests need, built from the Go module proxy at pinned versions into .tools/bin.
# helm gets the ldflags of its own release build (helm's Makefile): without them `helm version`
# says "v3.19" and `.Capabilities.KubeVersion` stays at v1.20.0, so `helm template`/`lint` reject
# a chart that requires a newer Kubernetes. The Kubernetes version is helm's client-go minor + 1.x
# as upstream derives it (client-go v0.34.2 -> 1.34).
$(HELM_STAMP):
	@set -euo pipefail; \
	gomod=$$(go mod download -json helm.sh/helm/v3@$(HELM_VERSION) | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$$/\1/p'); \
	clientgo=$$(awk '$$1 == "k8s.io/client-go" { print $$2 }' "$$gomod"); \
	IFS=. read -r cmajor cminor _ <<< "$${clientgo#v}"; \
	kmajor=$$((cmajor + 1)); kminor=$$cminor; \
	echo "building helm $(HELM_VERSION) (Kubernetes $$kmajor.$$kminor from client-go $$clientgo)"; \
	GOBIN=$(CURDIR)/.tools/bin CGO_ENABLED=0 go install -trimpath -ldflags "-w -s \
	  -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	  -X helm.sh/helm/v3/internal/version.metadata= \
	  -X helm.sh/helm/v3/internal/version.gitCommit=$(HELM_GIT_COMMIT) \
	  -X helm.sh/helm/v3/internal/version.gitTreeState=clean \
	  -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$$kmajor \
	  -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$$kminor \
	  -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$$kmajor \
	  -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$$kminor" \
	  helm.sh/helm/v3/cmd/helm@$(HELM_VERSION); \
	rm -f .tools/bin/.helm-*; touch $@
$(HELM): $(HELM_STAMP)
# nats-server with JetStream for the hand-off tests and the benchmark (Debian's 2.9 is too old).
$(NATS_SERVER):
	GOBIN=$(CURDIR)/.tools/bin CGO_ENABLED=0 go install github.com/nats-io/nats-server/v2@$(NATS_SERVER_VERSION)
# Debian packages the tests run for real (binary:package): Prometheus as the remote write receiver,
# Alertmanager for the mapping end-to-end test, jq for the shipped Nagios/Icinga notification script;
# mmdebstrap and umoci build the image (make image); containerd, runc, the CNI plugins and
# iptables make the test cluster's node; chromium is the browser the console tests drive (playwright-core);
# strace shows which thread flushes the dead letters' disk (dead-letters/flush-off-the-loop).
# Installed when missing (CI runs as root).
DEBIAN_TOOLS := /usr/bin/prometheus:prometheus /usr/bin/prometheus-alertmanager:prometheus-alertmanager /usr/bin/jq:jq \
  /usr/bin/mmdebstrap:mmdebstrap /usr/bin/umoci:umoci /usr/bin/containerd:containerd /usr/sbin/runc:runc \
  /usr/lib/cni/bridge:containernetworking-plugins /usr/sbin/iptables:iptables /usr/bin/chromium:chromium \
  /usr/bin/strace:strace
debian-tools:
	@missing=""; for t in $(DEBIAN_TOOLS); do [ -x "$${t%%:*}" ] || missing="$$missing $${t##*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "make tools: install the Debian packages$$missing" >&2; exit 1; fi; \
	  for i in 1 2 3 4 5; do (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing) && break; \
	    echo "make tools: apt-get failed (dpkg lock?); retrying" >&2; sleep 10; done; \
	fi
# A small build of the collector rather than the contrib distribution, which carries hundreds of
# components the tests never use and takes many times longer to build.
$(OTELCOL): test/otelcol/main.go test/otelcol/go.mod test/otelcol/go.sum
	mkdir -p .tools/bin && cd test/otelcol && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $(CURDIR)/$(OTELCOL) .
tools: $(HELM_STAMP) $(NATS_SERVER) $(OTELCOL) debian-tools

build: deps
	npm run build

lint: deps
	npm run lint

# The intake image as an OCI archive, without Docker: build/intake-image.tar (image/build.sh).
# Push it with `skopeo copy oci-archive:build/intake-image.tar docker://REGISTRY/intake:TAG`.
image: build debian-tools
	bash image/build.sh

# Everything: lint, unit and end-to-end tests, the integration tests against a real
# kube-apiserver (built from source on first use; stopped afterwards if this run started it), then
# the chart on a real node (make test-cluster). The node needs root and kernel features: checked
# first (test/cluster/node-check.sh), so a machine that cannot run it fails at once, saying why.
test: build lint tools
	@echo "make test: $$(node --version) from $$(command -v node)"
	bash test/cluster/node-check.sh
	$(JEST) --ci --maxWorkers=2 --selectProjects unit e2e
	$(JEST) --ci --runInBand --selectProjects e2e-timed
	bash test/with-testcluster.sh $(JEST) --ci --runInBand --selectProjects integration
	$(run-test-cluster)

test-unit: deps tools
	$(JEST) --selectProjects unit

# The end-to-end tests that hold a latency, memory or rate bound (e2e-timed, jest.config.js) run
# one at a time after the others, so no neighbouring test's load can fail them.
test-e2e: build tools
	$(JEST) --maxWorkers=2 --selectProjects e2e
	$(JEST) --runInBand --selectProjects e2e-timed

test-integration: build tools
	bash test/with-testcluster.sh $(JEST) --runInBand --selectProjects integration

# The pictures in docs/console.md (docs/images/console-*.png), taken from the real console by the
# browser tests that call screenshotForDocs, with INTAKE_DOCS_SCREENSHOTS=1 (docs/console.md says why
# only then).
docs-screenshots: build tools
	INTAKE_DOCS_SCREENSHOTS=1 bash test/with-testcluster.sh $(JEST) --runInBand --selectProjects integration -- $$(grep -l screenshotForDocs test/integration/*.test.ts)

# A real kube-apiserver + etcd + controllers on loopback; writes .testcluster/kubeconfig.
testcluster:
	bash test/cluster/start.sh

testcluster-stop:
	bash test/cluster/stop.sh

# The same control plane with a real node (kubelet, containerd, kube-proxy, CoreDNS; nats-server and
# Alertmanager as pods) in a network namespace of its own: .testcluster-node/kubeconfig. Root only.
testcluster-node: tools
	bash test/cluster/node-start.sh

testcluster-node-stop:
	bash test/cluster/node-stop.sh

# The chart installed with helm on that node, with the image make image builds (test/node). Once
# the node's images have a Debian base (test/cluster/bin/images/rootfs.tar, same scripts), the
# intake image is built on it (image/build.sh's ROOTFS) instead of running mmdebstrap again
# (its files carry the time of the commit the base was built at, so the digest is not make image's);
# make image always builds a fresh base.
# make test runs the same steps on the build it already made.
TESTCLUSTER_ROOTFS := test/cluster/bin/images/rootfs.tar
define run-test-cluster
bash test/cluster/node-check.sh
@if [ -f $(TESTCLUSTER_ROOTFS) ] && [ "$$(cat $(TESTCLUSTER_ROOTFS).key 2>/dev/null)" = "$$(cat image/rootfs.sh image/rootfs-hook.sh | sha256sum | cut -d' ' -f1)" ]; then \
  echo "ROOTFS=$(TESTCLUSTER_ROOTFS) bash image/build.sh"; ROOTFS=$(CURDIR)/$(TESTCLUSTER_ROOTFS) bash image/build.sh; \
else echo "bash image/build.sh"; bash image/build.sh; fi
bash test/with-testcluster-node.sh $(JEST) --ci --runInBand --selectProjects node
endef
test-cluster: build tools
	$(run-test-cluster)

# Benchmarks, not tests: they print tables measured in one run on this machine.
bench-build: build
	npx tsc -p tsconfig.bench.json

bench: bench-build tools
	bash bench/run.sh

bench-operator: bench-build
	bash test/with-testcluster.sh node dist/bench/operator/operator.js

# The sizing benchmark (docs/sizing.md): the ingester's CPU and memory per 1,000 events/s at a fixed
# rate (single events and 100-event batches, log sink and JetStream) and the stream's bytes per
# event, against a real nats-server; about two minutes, loopback only.
bench-sizing: bench-build $(NATS_SERVER)
	node dist/bench/sizing/sizing.js

clean:
	rm -rf dist coverage build
