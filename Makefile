# gpu-inventory-operator — developer entry points. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
CLUSTER := hack/local-cluster.sh
KUBECONFIG_LOCAL := $(CURDIR)/target/local-cluster/kubeconfig

# Kubernetes versions `make test-compat` runs the integration suite on (`make test` runs the default, v1.34.4).
COMPAT_VERSIONS ?= v1.32.13 v1.37.2

.PHONY: help build lint lint-rust lint-actions lint-chart unit-test integration-test test test-compat compat-tests print-compat-versions cluster-up cluster-down cluster-status demo demo-ci bench memory-model scan-cost utilization-cost soak crd-manifest chart-files install-plugin release-local registry-doc

# `make install-plugin` installs into $(PREFIX)/bin.
PREFIX ?= $(HOME)/.local
# The cargo target directory (install-plugin reads the release binary from it).
TARGET_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

build: ## Build the operator (debug)
	$(CARGO) build --locked

lint: lint-rust lint-actions lint-chart ## All linters

lint-rust: ## cargo fmt --check and clippy -D warnings (the workspace: the operator and testkit/)
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

lint-actions: ## actionlint on .github/workflows (built once from its Go module, cached outside the repo)
	actionlint="$$(hack/build-control-plane.sh actionlint)"; "$$actionlint" -no-color .github/workflows/*.yml

lint-chart: ## helm lint --strict of the chart, default and all-features values (helm built once from its Go module)
	helm="$$(hack/build-control-plane.sh helm)"; \
	  "$$helm" lint --strict charts/gpu-inventory-operator; \
	  "$$helm" lint --strict charts/gpu-inventory-operator --values charts/gpu-inventory-operator/ci/all-features-values.yaml

# --workspace: the test kit's (testkit/) unit tests too, built in the same run (one set of dependency features).
unit-test: ## Unit tests (no cluster): the operator's and the test kit's
	$(CARGO) test --locked --workspace --lib --bins

# Integration tests: against GPUINV_TEST_KUBECONFIG when set, else against the local control plane, by
# hack/integration-tests.sh (its header says what runs when): the test binaries TEST_JOBS at a time (1: one after
# another; 4, the default, four at a time: see CONTRIBUTING.md), each one's output in
# target/test-logs/<binary>.log; then the fault tier (the tests named fault_* in tests/faults.rs and tests/chaos.rs:
# they stop and start the API server) alone, one test at a time; last, alone, tests/quiet_fleet.rs and
# tests/quotas_crds.rs (they change the shared cluster for everyone). tests/soak.rs (the soak's 1-minute form on
# an etcd + kube-apiserver of its own) runs among the others. `make test-compat` runs only the version-sensitive
# subset (tests/compat-tests.txt). TESTS="quotas faults" runs only those binaries.
TEST_JOBS ?= 4
TESTS ?=
integration-test: ## Integration tests against the running cluster, test binaries concurrently (TEST_JOBS at a time; logs in target/test-logs/), then the fault tests alone; tests that do not apply to the server's version (tests/version-gates.txt) are not run and are listed by name; every step runs, failures are summarised
	CARGO="$(CARGO)" TEST_JOBS="$(TEST_JOBS)" hack/integration-tests.sh $(TESTS)

# Each tier's time, then the integration tier's phases (target/test-logs/phases.txt, by hack/integration-tests.sh).
test: ## Everything: lint, unit tests, cluster-up, integration tests, cluster-down; every tier runs even when one fails, then each tier's time and a summary
	@failed=(); times=(); start=$$SECONDS; \
	tier() { times+=("$$1 $$((SECONDS - start))s"); start=$$SECONDS; }; \
	rm -f target/test-logs/phases.txt; \
	$(MAKE) lint || failed+=(lint); tier lint; \
	$(MAKE) unit-test || failed+=(unit-test); tier unit-test; \
	if [[ -n "$${GPUINV_TEST_KUBECONFIG:-}" ]]; then \
	  $(MAKE) integration-test || failed+=(integration-test); tier integration-test; \
	elif $(CLUSTER) up; then \
	  tier cluster-up; \
	  $(MAKE) integration-test || failed+=(integration-test); tier integration-test; \
	  $(CLUSTER) down; tier cluster-down; \
	else \
	  failed+=(cluster-up); $(CLUSTER) down || true; tier cluster-up; \
	fi; \
	phases=""; [[ -s target/test-logs/phases.txt ]] && phases=" ($$(paste -sd' ' target/test-logs/phases.txt | sed 's/s /s, /g'))"; \
	echo "make test: tier times: $$(printf '%s, ' "$${times[@]}" | sed 's/, $$//'); integration-test phases$${phases:- (none)}; total $$SECONDS s"; \
	if (( $${#failed[@]} )); then echo "make test: failed: $${failed[*]}" >&2; exit 1; fi; \
	echo "make test: every tier passed (lint, unit-test, integration-test)"

test-compat: ## The version-sensitive subset of the integration tests (tests/compat-tests.txt) on each of COMPAT_VERSIONS (a fresh local cluster per version); every version runs, failures are summarised
	@if [[ -n "$${GPUINV_TEST_KUBECONFIG:-}" ]]; then \
	  echo "test-compat runs local clusters; unset GPUINV_TEST_KUBECONFIG" >&2; exit 2; \
	fi
	@failed=(); for version in $(COMPAT_VERSIONS); do \
	  echo "== integration tests on Kubernetes $$version"; \
	  if ! K8S_VERSION=$$version $(CLUSTER) up; then failed+=("$$version (cluster up)"); $(CLUSTER) down; continue; fi; \
	  $(MAKE) compat-tests || failed+=("$$version"); \
	  $(CLUSTER) down; \
	done; \
	if (( $${#failed[@]} )); then printf 'test-compat: integration tests failed on Kubernetes %s\n' "$${failed[@]}" >&2; exit 1; fi

print-compat-versions: ## Print COMPAT_VERSIONS (for .ci/run)
	@echo $(COMPAT_VERSIONS)

compat-tests: ## The version-sensitive subset of the integration tests (tests/compat-tests.txt) against the running cluster
	CARGO="$(CARGO)" hack/compat-tests.sh

cluster-up: ## Start the local cluster (K8S_VERSION selects the version; builds its binaries once)
	$(CLUSTER) up

cluster-down: ## Stop the local control plane and delete its state
	$(CLUSTER) down

cluster-status: ## Show what runs and where the kubeconfig and audit log are
	$(CLUSTER) status

demo: ## The article's home lab on a local control plane; runs the operator until Ctrl-C
	hack/demo.sh

demo-ci: ## The demo, non-interactive: exits after showing the result
	hack/demo.sh --once

bench: ## Benchmarks at 1,000 and 5,000 nodes against an article-style baseline
	hack/bench.sh

memory-model: ## Heap bytes per node, pod and GPU node entry (dhat, glibc), and the formula for the scale fleets
	$(CARGO) bench --locked --bench memory-model

registry-doc: ## Regenerate docs/vendors.md's registry section from src/inventory/vendors/registry/*.tsv
	python3 hack/registry-doc.py

scan-cost: ## The CPU of one scan of a whole fleet, in process, at 5,000 and 65,000 nodes
	$(CARGO) bench --locked --bench scan-cost

utilization-cost: ## One round of the idle-GPU source (Prometheus's answer read, joined with the holdings) at 13,000 GPU nodes x 8 GPUs
	$(CARGO) bench --locked --bench utilization-cost

soak: ## Chaos soak: SOAK_SECS (1800) of churn on 5,000 nodes with API-server kills, etcd pauses, leader kills; report in target/soak
	hack/soak.sh

crd-manifest: ## Regenerate deploy/crd.yaml from the Rust types (and the chart's copy)
	$(CARGO) run --quiet --locked -- crd > deploy/crd.yaml
	$(MAKE) --no-print-directory chart-files

chart-files: ## Copy deploy/'s CRD, alerts and dashboard into the chart (charts/gpu-inventory-operator/files/)
	cp deploy/crd.yaml charts/gpu-inventory-operator/files/crd.yaml
	cp deploy/monitoring/prometheus-rule.yaml deploy/monitoring/grafana-dashboard.json charts/gpu-inventory-operator/files/

install-plugin: ## Release build, installed as $(PREFIX)/bin/gpu-inventory-operator and the kubectl plugin kubectl-gpu_inventory
	$(CARGO) build --release --locked --bin gpu-inventory-operator
	install -D -m 0755 $(TARGET_DIR)/release/gpu-inventory-operator $(PREFIX)/bin/gpu-inventory-operator
	ln -sf gpu-inventory-operator $(PREFIX)/bin/kubectl-gpu_inventory
	@echo "installed: $(PREFIX)/bin/kubectl-gpu_inventory -> gpu-inventory-operator; run: kubectl gpu-inventory"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on PATH; kubectl finds plugins on PATH";; esac

release-local: ## The release's static musl x86_64 tarball in dist/, from Debian packages (hack/release-local.sh)
	hack/release-local.sh
