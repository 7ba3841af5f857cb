# A Makefile in front of CMake, as kubebuilder projects have. `make help` lists the targets.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
BIN := $(BUILD_DIR)/bin

.PHONY: help deps configure build test unit integration e2e demo bench lint format \
        local-cluster-up local-cluster-down deploy sanitize clean

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

deps: ## Install missing Debian packages (apt-get).
	@hack/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null

build: configure ## Build everything into build/bin.
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build ## Every test: unit, integration (real control plane) and end to end.
	@hack/test.sh $(BUILD_DIR)

unit: build ## Unit tests only (no cluster).
	@cd $(BUILD_DIR) && ctest -L unit --output-on-failure -j $(JOBS)

integration: build ## Integration tests against a real kube-apiserver + etcd.
	@hack/test.sh $(BUILD_DIR) integration

e2e: build ## End to end through kubectl on the local control plane.
	@hack/test.sh $(BUILD_DIR) e2e

demo: configure ## The main job on the embedded default (see README).
	@echo "demo: building the paratune CLI first (the offline campaign is shown before the cluster parts build)"
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target paratune
	@$(BIN)/paratune simulate -f manifests/samples/llama3-8b-h100x8.yaml | tail -n 20
	@echo "demo: building the operator and the simulated kubelet (only what the demo runs)"
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target paratune-operator paratune-kubelet-sim
	@hack/demo.sh $(BUILD_DIR)

bench: build ## Benchmarks; figures land in bench/RESULTS.md.
	@hack/bench.sh $(BUILD_DIR)

lint: ## clang-format check and clang-tidy on our sources.
	@hack/lint.sh $(BUILD_DIR)

format: ## Rewrite sources with clang-format.
	@find agents operator controllers cli hack tests bench -name '*.cc' -o -name '*.h' | xargs -r clang-format -i

local-cluster-up: build ## Real control plane on loopback plus simulated nodes.
	@hack/local-cluster.sh up $(BUILD_DIR)

local-cluster-down: ## Stop everything local-cluster-up started.
	@hack/local-cluster.sh down $(BUILD_DIR)

deploy: build ## Install CRDs and manifests, (re)start the operator under its ServiceAccount.
	@hack/local-cluster.sh deploy $(BUILD_DIR)

sanitize: ## Build and run the unit tests under ASan/UBSan in build-asan/.
	@$(MAKE) unit BUILD_DIR=build-asan CMAKE_FLAGS=-DPARATUNE_SANITIZE=ON BUILD_TYPE=Debug

clean:
	rm -rf $(BUILD_DIR) build-asan
