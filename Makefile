# ipclab: `make reproduce` reruns every experiment and builds the report; `make test` tests.
PYTHON  ?= python3
PROFILE ?= quick
BACKEND ?= local
OUT     ?= out

.PHONY: help setup system-deps docker-engine test test-fast reproduce report lab bench lint \
        format proto go-proto go-lint base-image images clean

help:
	@echo "make reproduce [PROFILE=quick|full] [BACKEND=local|docker]  rerun everything, build $(OUT)/report.pdf"
	@echo "make test        the test suite (real stacks, real broker; docker tests when an engine answers)"
	@echo "make lab         JupyterLab on notebooks/"
	@echo "make bench       transport and stack benchmarks (print figures)"
	@echo "make base-image  build the local Debian base image (no registry needed)"

system-deps:
	bash scripts/system-deps.sh

docker-engine:
	bash scripts/docker-engine.sh

setup: system-deps
	$(PYTHON) -m pip install -q -e '.[dev,bench,notebooks]'
	$(PYTHON) -m ipykernel install --user --name python3 >/dev/null

test:
	$(PYTHON) -m pytest -q -ra

test-fast:
	$(PYTHON) -m pytest -q -m "not slow and not docker"

reproduce: setup $(if $(filter docker,$(BACKEND)),docker-engine)
	$(PYTHON) -m ipclab.cli reproduce --profile $(PROFILE) --backend $(BACKEND) --out $(OUT)

report:
	$(PYTHON) -m ipclab.cli report --out $(OUT)

lab: setup
	$(PYTHON) -m jupyterlab notebooks/

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

clean:
	rm -rf $(OUT) .pytest_cache
