# Every target builds .venv on first use and re-installs only when pyproject.toml changes.
VENV ?= .venv
PYTHON := $(VENV)/bin/python
DEMO_ARGS ?= compare --out compare-out

.PHONY: test demo bench bench-quick bench-readme

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

bench-quick: $(VENV)/.installed-bench
	$(PYTHON) -m benchmarks --quick --out bench-out

# Rewrites README's table (between the bench markers) from bench-out/report.json of `make bench`.
bench-readme: $(VENV)/.installed-bench
	$(PYTHON) -m benchmarks.readme --report bench-out/report.json --readme README.md

$(PYTHON):
	python3 -m venv $(VENV)

# Stamps: make compares their age with pyproject.toml, so an unchanged project installs once.
$(VENV)/.installed-dev: pyproject.toml | $(PYTHON)
	$(PYTHON) -m pip install -e '.[dev]'
	touch $@

$(VENV)/.installed-demo: pyproject.toml | $(PYTHON)
	$(PYTHON) -m pip install -e '.[demo]'
	touch $@

# mysqlclient (bench extra) compiles against the MariaDB client library: install it when missing.
$(VENV)/.installed-bench: pyproject.toml | $(PYTHON)
	pkg-config --exists libmariadb 2>/dev/null || \
		(apt-get update -qq && apt-get install -y -qq libmariadb-dev pkg-config)
	$(PYTHON) -m pip install -e '.[dev,bench]'
	touch $@
