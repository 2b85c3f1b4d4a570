# Two commands do all set-up on a fresh machine: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
export NO_MKDOCS_2_WARNING := 1
TEST_KINDS := page snippet card model translation number allowlist

.PHONY: serve site test lint lock bench screenshots clean $(addprefix test-,$(TEST_KINDS))

include verify/make.mk

# Two ways to install, one set of versions (constraints.txt):
# - by default (`make serve`, `make test`, .ci/run): pip resolves requirements*.txt under
#   constraints.txt from the indexes your pip is configured with (where it offers torch's CPU build, that);
# - LOCKED=1 (the workflow's jobs set it, on fresh runners): every file is hash-checked. The venv
#   gets exactly the files of lock/ (`make lock`: PyPI's files for CPython 3.11 on Linux x86_64,
#   torch's CUDA build among them), with --no-deps (nothing resolved at install) and
#   --no-build-isolation (the sdists, DeepSpeed and the project, are built by lock/build.txt's
#   setuptools, installed first, not by a build tool fetched unhashed). Meant for a fresh
#   checkout: packages an existing .venv already holds are kept as they are.
LOCKED ?=
LOCKED_PIP := $(PY) -m pip install --quiet --require-hashes --no-deps --no-build-isolation

ifeq ($(LOCKED),1)
$(STAMP): lock/build.txt lock/site.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(LOCKED_PIP) -r lock/build.txt
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(LOCKED_PIP) -r lock/site.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(TEST_STAMP): $(STAMP) lock/test.txt
	DS_BUILD_OPS=0 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(LOCKED_PIP) -r lock/test.txt
	touch $@
else
$(STAMP): requirements.txt constraints.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(PY) -m pip install --quiet -r requirements.txt -c constraints.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

# The tests' tools and oracles. DeepSpeed builds from source: DS_BUILD_OPS=0 keeps it CPU-only
# (no CUDA extensions compiled at install).
$(TEST_STAMP): $(STAMP) requirements-test.txt constraints.txt
	DS_BUILD_OPS=0 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(PY) -m pip install --quiet -r requirements-test.txt -c constraints.txt
	touch $@
endif

## lock: regenerate lock/ (the workflow's hash-pinned installs, LOCKED=1) from constraints.txt's versions, after a version bump there: uv, in a venv of its own under .cache/, reads PyPI
# uv is pinned by version (not hashed: it writes the hashes, and its output is reviewed in the diff).
# For CPython 3.11 on Linux x86_64 (the jobs' Python; 3.11.7 is the patch level the locked install
# was rehearsed on, and pymdown-extensions needs 3.11.5 or later); all of each version's files hashed.
UV_VERSION := 0.13.8
UV := .cache/uv-$(UV_VERSION)/bin/uv
LOCK_COMPILE := $(UV) pip compile --no-config --generate-hashes --python-version 3.11.7 --python-platform x86_64-manylinux_2_28
lock: $(UV)
	$(LOCK_COMPILE) requirements-build.txt -o lock/build.txt >/dev/null
	$(LOCK_COMPILE) requirements-build.txt requirements.txt -o lock/site.txt >/dev/null
	$(LOCK_COMPILE) requirements-build.txt requirements.txt requirements-test.txt -o lock/test.txt >/dev/null

$(UV):
	$(PYTHON) -m venv .cache/uv-$(UV_VERSION)
	.cache/uv-$(UV_VERSION)/bin/python -m pip install --quiet uv==$(UV_VERSION)

## serve: build both languages and serve them with live reload at http://127.0.0.1:$(PORT)/ (PORT=8000; `make serve PORT=8001` when 8000 is taken)
PORT ?= 8000
serve: $(STAMP) node_modules/.package-lock.json
	$(PY) -m hooks.serve --livereload --dev-addr=127.0.0.1:$(PORT)

## site: strict build of both languages into site/
site: $(STAMP) node_modules/.package-lock.json
	$(PY) -m verify.config mkdocs.yml
	$(PY) -m mkdocs build --strict

# Pyodide for the finder (copied into site/assets/pyodide/) and axe-core for the accessibility
# gate (npm registry, exact pins and sha512 integrity in package-lock.json; no package's install
# script runs, no git command: verify/npm_sources.py refuses anything but registry tarballs first)
node_modules/.package-lock.json: package.json package-lock.json
	$(PYTHON) -m verify.npm_sources
	npm ci --ignore-scripts --git=false --no-audit --no-fund --loglevel=error

## test: the whole test suite (browser and spelling tests skip without Chromium / hunspell; REQUIRE_BROWSER=1 / REQUIRE_SPELLING=1 make that a failure)
test: $(TEST_STAMP) node_modules/.package-lock.json
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder

## lint: ruff's lint rules and format check, mypy's types (pyproject.toml; `make test` runs the same, tests/test_code_quality.py); `ruff format` and `ruff check --fix` fix most
lint: $(TEST_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

## test-page, test-snippet, test-card, test-model, test-translation, test-number, test-allowlist: the tests one kind of change can break (pytest -m KIND: tests/conftest.py CHANGE_KINDS)
$(addprefix test-,$(TEST_KINDS)): test-%: $(TEST_STAMP) node_modules/.package-lock.json
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder -m $*

## bench: the performance budget (build ratio, rebuild time, page weight, suite time), printed and written to bench/results.md
bench: $(TEST_STAMP) node_modules/.package-lock.json
	$(PY) -m bench.run

## screenshots: every page of both languages at 1280x800 and 390x844 (Chromium), into screenshots/ (not committed)
screenshots: $(TEST_STAMP)
	$(PY) -m tests.browser.screenshots

clean:
	rm -rf site .cache .pytest_cache
