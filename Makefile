# intake: every developer and CI entry point. `make test` runs every test.
SHELL := /bin/bash
# The pinned Node LTS comes from the npm registry's `node` package (package.json devDependencies,
# .nvmrc): node_modules/.bin first, so every `node`, `npx` and script below runs on it, whatever
# Node the machine has.
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
JEST := env NODE_OPTIONS=--experimental-vm-modules node node_modules/jest/bin/jest.js

HELM_VERSION := v3.19.5
HELM := .tools/bin/helm

.PHONY: all deps tools debian-tools build lint test test-unit test-e2e test-integration testcluster testcluster-stop bench-build bench bench-operator clean

all: build

# npm ci only when the lockfile changed since the last install.
node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund
deps: node_modules/.package-lock.json

# Tools the tests need, built from the Go module proxy at pinned versions into .tools/bin.
$(HELM):
	GOBIN=$(CURDIR)/.tools/bin CGO_ENABLED=0 go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
# Debian packages the tests run for real (binary:package): Alertmanager for the mapping end-to-end
# test, jq for the shipped Nagios/Icinga notification script. Installed when missing (CI runs as root).
DEBIAN_TOOLS := /usr/bin/prometheus-alertmanager:prometheus-alertmanager /usr/bin/jq:jq
debian-tools:
	@missing=""; for t in $(DEBIAN_TOOLS); do [ -x "$${t%%:*}" ] || missing="$$missing $${t##*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "make tools: install the Debian packages$$missing" >&2; exit 1; fi; \
	  for i in 1 2 3 4 5; do (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing) && break; \
	    echo "make tools: apt-get failed (dpkg lock?); retrying" >&2; sleep 10; done; \
	fi
tools: $(HELM) debian-tools

build: deps
	npm run build

lint: deps
	npm run lint

# Everything: lint, unit and end-to-end tests, then the integration tests against a real
# kube-apiserver (built from source on first use; stopped afterwards if this run started it).
test: build lint tools
	@echo "make test: $$(node --version) from $$(command -v node)"
	$(JEST) --ci --selectProjects unit e2e
	bash test/with-testcluster.sh $(JEST) --ci --runInBand --selectProjects integration

test-unit: deps
	$(JEST) --selectProjects unit

test-e2e: build
	$(JEST) --selectProjects e2e

test-integration: build tools
	bash test/with-testcluster.sh $(JEST) --runInBand --selectProjects integration

# A real kube-apiserver + etcd + controllers on loopback; writes .testcluster/kubeconfig.
testcluster:
	bash test/cluster/start.sh

testcluster-stop:
	bash test/cluster/stop.sh

# Benchmarks, not tests: they print tables measured in one run on this machine.
bench-build: build
	npx tsc -p tsconfig.bench.json

bench: bench-build
	bash bench/run.sh

bench-operator: bench-build
	bash test/with-testcluster.sh node dist/bench/operator.js

clean:
	rm -rf dist coverage
