# The entry points. Each target sets up what it needs on a fresh machine
# (Node 24, npm packages, the Kubernetes binaries) before it runs.
.PHONY: up down test bench bench-compare screenshots generate lint typecheck unit integration cluster-up cluster-sync cluster-down

# How many nodes the local cluster has (make up NODES=2); make test always uses two.
NODES ?= 1

# Set everything up and start the system; prints where to reach it.
up:
	NODES=$(NODES) hack/up.sh

down:
	hack/down.sh

# The whole test suite; CI runs exactly this (.ci/run).
test:
	hack/test.sh

# Figures of the running system (times, writes, memory), never part of test;
# BENCH_KWOK=1 adds the controller at scale on KWOK's fake nodes.
bench:
	hack/bench.sh

# The change of every figure against the last recorded run.
bench-compare:
	hack/bench-compare.sh

# The dashboard's pictures in docs/screenshots, from the running local cluster (make up first).
screenshots:
	hack/run.sh sh -c "cd e2e && KUBEVIRT_TS_DASHBOARD_URL=https://198.18.255.1:30080 npx playwright test -c playwright.screenshots.config.ts"

generate:
	hack/run.sh npm run generate

lint:
	hack/run.sh npm run lint

typecheck:
	hack/run.sh npm run typecheck

unit:
	hack/run.sh npm test

integration:
	hack/run.sh npm run test:integration

# The local cluster (see hack/cluster-*.sh): one node, or NODES=2 for two.
cluster-up:
	NODES=$(NODES) hack/cluster-up.sh

cluster-sync:
	hack/cluster-sync.sh

cluster-down:
	hack/cluster-down.sh
