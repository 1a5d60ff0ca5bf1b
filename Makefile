# Every target builds .venv on first use and re-installs only when pyproject.toml changes.
VENV ?= .venv
PYTHON := $(VENV)/bin/python
DEMO_ARGS ?= compare --out compare-out

.PHONY: test demo bench

test: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pytest
	IDFIELDS_PURE_PYTHON=1 $(VENV)/bin/pytest -q tests/test_generators.py tests/hostile

# The demo needs the core and the compare extra only, not the dev toolchain.
demo: $(VENV)/.installed-demo
	$(VENV)/bin/idfields $(DEMO_ARGS)

bench: $(VENV)/.installed-bench
	$(PYTHON) -m benchmarks --out bench-out

$(PYTHON):
	python3 -m venv $(VENV)

# Stamps: make compares their age with pyproject.toml, so an unchanged project installs once.
$(VENV)/.installed-dev: pyproject.toml | $(PYTHON)
	$(PYTHON) -m pip install -e '.[dev]'
	touch $@

$(VENV)/.installed-demo: pyproject.toml | $(PYTHON)
	$(PYTHON) -m pip install -e '.[demo]'
	touch $@

$(VENV)/.installed-bench: pyproject.toml | $(PYTHON)
	$(PYTHON) -m pip install -e '.[dev,bench]'
	touch $@
