# ipclab: `make reproduce` reruns every experiment and builds the report; `make test` tests.
PYTHON  ?= python3
PROFILE ?= quick
BACKEND ?= local
OUT     ?= out

.PHONY: help setup system-deps docker-engine test test-fast fuzz reproduce report lab bench lint \
        format proto go-proto go-lint base-image images clean k8s-deps k8s-cluster k8s-cluster-down

help:
	@echo "make reproduce [PROFILE=quick|full] [BACKEND=local|docker]  rerun everything, build $(OUT)/report.pdf and $(OUT)/site/"
	@echo "make test        the test suite (real stacks, real broker; docker tests when an engine answers; two workers, TEST_WORKERS=0: one process)"
	@echo "make lab         JupyterLab on notebooks/"
	@echo "make bench       transport and stack benchmarks (print figures)"
	@echo "make base-image  build the local Debian base image (no registry needed)"
	@echo "make k8s-cluster a local single-node Kubernetes (built once, about 7 min; docs/kubernetes.md)"
	@echo "make k8s-cluster-down  stop it and undo what it changed on the host"

system-deps:
	bash scripts/system-deps.sh

docker-engine:
	bash scripts/docker-engine.sh

# CI (CI=true) installs the hash-locked versions (.ci/requirements.lock, for CPython 3.11.7:
# scripts/python-lock.sh) and ipclab without resolving anything; elsewhere pip resolves
# pyproject.toml's ranges.
setup: system-deps
ifeq ($(CI),true)
	$(PYTHON) -m pip install -q --require-hashes -r .ci/requirements.lock
	$(PYTHON) -m pip install -q --no-deps --no-build-isolation -e .
else
	$(PYTHON) -m pip install -q -e '.[dev,bench,notebooks,stores]'
endif
	$(PYTHON) -m ipykernel install --user --name python3 >/dev/null

# The suite installs what it needs first (a fresh clone has nothing). pytest runs in the
# foreground with SIGINT restored: a shell's background job or nohup ignores it, and the
# tests that send Ctrl-C to `ipclab up`/`run` rely on the CLI setting its own handlers.
# Two workers by default (pytest-xdist): a module runs whole on one worker, the tests that
# must not run beside each other (docker, CPU affinity, ...) in one group, "serial"
# (tests/conftest.py). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
# SETUP= skips the setup step of test, test-fast and reproduce, for a caller that has just
# installed everything itself (.ci/run: a `make setup` re-checks the whole lock, ~10 s each)
SETUP ?= setup
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)
test: $(SETUP)
	$(PYTHON) -m pytest $(XDIST) -q -ra --durations=30

test-fast: $(SETUP)
	$(PYTHON) -m pytest $(XDIST) -q -m "not slow and not docker"

# Every stack of the registry, 10,000 inputs per target (docs/fuzzing.md; 15-30 min on
# 2 cores; the native adapters need nginx and nghttpx, which setup's system-deps installs).
fuzz: setup
	$(PYTHON) -m ipclab.fuzz --out docs/fuzzing.md

reproduce: $(SETUP) $(if $(filter docker,$(BACKEND)),docker-engine)
	$(PYTHON) -m ipclab.cli reproduce --profile $(PROFILE) --backend $(BACKEND) --out $(OUT)

report:
	$(PYTHON) -m ipclab.cli report --out $(OUT)

# Loopback only, no browser (there may be none), root allowed (containers, CI); the URL
# with its token is printed.
LAB_PORT  ?= 8888
LAB_FLAGS := --ip=127.0.0.1 --port=$(LAB_PORT) --no-browser $(if $(filter 0,$(shell id -u)),--allow-root)
lab: setup
	$(PYTHON) -m jupyterlab notebooks/ $(LAB_FLAGS)

bench:
	$(PYTHON) bench/transports.py
	$(PYTHON) bench/stacks.py

lint:
	ruff check .
	ruff format --check src services tests bench

format:
	ruff format src services tests bench

proto:
	cd services/proto && $(PYTHON) -m grpc_tools.protoc -I. --python_out=. --pyi_out=. *.proto

# the Go stacks' generated code (committed; see services/go/gen.sh for the plugins it needs)
go-proto:
	services/go/gen.sh

go-lint:
	cd services/go && test -z "$$(gofmt -l .)" && go vet ./...

base-image: docker-engine
	$(PYTHON) -m ipclab.backends.docker.images base

images: docker-engine
	$(PYTHON) -m ipclab.backends.docker.images build

# A single-node Kubernetes on this machine from package and module sources only
# (docs/kubernetes.md): Debian's containerd, runc and CNI plugins; the control plane and
# kubelet built once from Kubernetes's Go modules into build/kubernetes/<hash> (measured:
# 400 s from a fresh clone with empty Go caches, never during a measurement; cached after;
# a start from the cache takes about 5 s), then started
# with each step's time printed. Loopback only; root only.
k8s-deps:
	bash scripts/k8s-deps.sh
	$(PYTHON) -m pip install -q -e '.[k8s]'

k8s-cluster: k8s-deps
	$(PYTHON) -m ipclab.cli cluster up --build

k8s-cluster-down:
	$(PYTHON) -m ipclab.cli cluster down

clean:
	rm -rf $(OUT) .pytest_cache
