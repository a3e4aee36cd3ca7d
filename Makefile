# secrag: `make run` sets everything up and runs the main job; `make test` runs the test suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.secrag-installed
# torch, pinned, CPU build: from PyTorch's CPU index, or from what pip is configured with when that index
# does not answer within TORCH_PROBE_SECONDS (never the CUDA build on a machine without a GPU). Point
# TORCH_INDEX_URL at a mirror, or at a CUDA index where one is wanted; empty: pip's own index, unchecked
# (deploy/install-torch.sh). deploy/Dockerfile pins the same version and index.
TORCH_VERSION       ?= 2.13.0
TORCH_INDEX_URL     ?= https://download.pytorch.org/whl/cpu
TORCH_PROBE_SECONDS ?= 5
export TORCH_VERSION TORCH_INDEX_URL TORCH_PROBE_SECONDS
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install browser run status test test-fast explore test-data upstream lint schema image image-check clean

install: $(STAMP)

# torch first, pinned and CPU-only: unpinned, pip would pull gigabytes of CUDA wheels.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	deploy/install-torch.sh $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,lint]'
	touch $(STAMP)

run: install
	$(BIN)/secrag run

# In a second terminal while `make run` holds the first: sources, documents, chunks, embeddings.
status:
	$(BIN)/secrag status

test: upstream install browser
	$(BIN)/python -m pytest

# The browser tests (Swagger UI at /docs, the Dagster UI) render pages in Debian's headless Chromium;
# installed here when missing (as root, from Debian's packages), or named by SECRAG_TEST_CHROMIUM.
browser:
	@test -n "$$SECRAG_TEST_CHROMIUM" || command -v chromium >/dev/null || { \
	  test "$$(id -u)" = 0 && command -v apt-get >/dev/null && echo "make: installing Debian's chromium for the browser tests" \
	  && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || { \
	  echo "make: the browser tests need Chromium: apt-get install chromium, or set SECRAG_TEST_CHROMIUM" >&2; exit 1; }

test-fast: upstream install
	$(BIN)/python -m pytest tests/unit

# The property tests (hypothesis) with new random cases: `make test` runs them derandomized (the `ci` profile of
# tests/plugins/hypothesis_profiles.py: the same cases on every run); this prints its seed first, and
# `make explore SEED=<seed>` tries the same cases again.
ifndef SEED
SEED := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
endif
explore: upstream install
	@echo "make explore: hypothesis seed $(SEED) (the same cases again: make explore SEED=$(SEED))"
	$(BIN)/python -m pytest -m hypothesis --hypothesis-profile=explore --hypothesis-seed=$(SEED) --hypothesis-show-statistics tests

# The tests read real upstream data from UPSTREAM (tests/plugins/upstream.py): a snapshot of every source
# at pinned commits beside the clone. `make test-data` rebuilds it from the upstreams (GitHub; about 130 MB)
# at the pins of tests/upstream.lock.yaml; `python -m tests.upstream_data --plan` prints what it fetches.
UPSTREAM := ../shared/upstream
upstream:
	@test -f $(UPSTREAM)/MANIFEST.json || { echo "make: the tests need the upstream snapshot $(UPSTREAM), which is missing: \`make test-data\` fetches it (network, about 130 MB)" >&2; exit 1; }

test-data: install
	$(BIN)/python -m tests.upstream_data --target $(UPSTREAM)

# Static checks: lint rules, the import layers of pyproject.toml ([tool.importlinter]) and types
# ([tool.mypy]: strict on the core and the API, the default checks on the pipeline and the command line).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

schema: install
	$(BIN)/secrag db dump-schema --output sql/schema.sql

# The container image (deploy/Dockerfile): with Docker when an engine answers, else with podman or buildah
# (chroot isolation). SECRAG_IMAGE, PYTHON_IMAGE, TORCH_INDEX_URL and TORCH_WHEELS override the defaults.
image:
	deploy/build-image.sh

# As root on a machine without a Docker engine: a Debian base when none is given, the build, then every
# role run from the image's file system with no network (docs/deployment.md). Takes minutes.
image-check:
	deploy/check-image.sh

clean:
	-$(BIN)/secrag db stop
	rm -rf .secrag
