# intake: every developer and CI entry point. `make test` runs every test.
SHELL := /bin/bash
JEST := NODE_OPTIONS=--experimental-vm-modules node node_modules/jest/bin/jest.js

.PHONY: all deps build lint test test-unit test-e2e bench clean

all: build

# npm ci only when the lockfile changed since the last install.
node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund
deps: node_modules/.package-lock.json

build: deps
	npm run build

lint: deps
	npm run lint

test: build lint
	$(JEST) --ci

test-unit: deps
	$(JEST) --selectProjects unit

test-e2e: build
	$(JEST) --selectProjects e2e

# A benchmark, not a test: prints a table and ratios measured in one run on this machine.
bench: build
	bash bench/run.sh

clean:
	rm -rf dist coverage
