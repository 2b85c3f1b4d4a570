# Two commands do all set-up on a fresh machine: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve site test bench clean

include verify/make.mk

$(STAMP): requirements.txt constraints.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt -c constraints.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

## serve: build both languages and serve them with live reload at http://127.0.0.1:8000/
serve: $(STAMP)
	$(PY) -m mkdocs serve --livereload

## site: strict build of both languages into site/
site: $(STAMP)
	$(PY) -m mkdocs build --strict

## test: the whole test suite (browser tests skip unless Chromium is installed; REQUIRE_BROWSER=1 makes that a failure)
test: $(STAMP)
	$(PY) -m pytest

clean:
	rm -rf site .cache .pytest_cache
