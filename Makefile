# Every target builds .venv on first use and re-installs only when pyproject.toml changes.
VENV ?= .venv
PYTHON := $(VENV)/bin/python
DEMO_ARGS ?= compare --out compare-out

DIST ?= dist

# Python keeps the bytecode it compiles, and pytest its rewritten test modules, between runs:
# where the environment sets PYTHONDONTWRITEBYTECODE, each pytest worker would rewrite every
# test module again, and each of the suite's subprocesses recompile what it imports.
unexport PYTHONDONTWRITEBYTECODE

# The suite in two tiers, by the markers of what a test needs (pyproject.toml; tests/conftest.py
# marks a test from the fixtures it uses). The fast tier needs no server: `make check` runs it
# with every server address unreachable, so a test reaching one unmarked fails there.
NEEDS_SERVERS := postgres or mysql or redis or native or cluster or slow or gate
FAST := not ($(NEEDS_SERVERS))
NO_SERVERS := IDFIELDS_TEST_DATABASE_URL=postgresql://nobody@127.0.0.1:9/none \
	IDFIELDS_TEST_MYSQL_URL=mysql://nobody@127.0.0.1:9/none IDFIELDS_TEST_REDIS_URL= \
	IDFIELDS_REQUIRE_POSTGRES=1 IDFIELDS_REQUIRE_MYSQL=1
# pytest-xdist workers, one per core, handed one test at a time: the slow tests come first
# (tests/conftest.py), so the workers finish together. What workers share (make dist, venvs)
# is made once under a file lock (tests/shared.py), whichever worker runs the test.
JOBS ?= $(shell nproc)
PARALLEL ?= -n $(JOBS) --dist load --maxschedchunk 1

.PHONY: test check lint docs demo dist bench bench-quick bench-docs

# The static checks and the docs site, then every test in one run (the fast tier's share the
# workers with the slow ones that wait on servers and clocks); then the generators again on the
# pure-Python core (marker core).
test: lint docs
	$(VENV)/bin/pytest $(PARALLEL)
	IDFIELDS_PURE_PYTHON=1 $(VENV)/bin/pytest $(PARALLEL) -q -m core

# The static checks and every test that needs no server, each server address unreachable (a
# test reaching one without its marker fails): under a minute.
check: lint
	$(NO_SERVERS) $(VENV)/bin/pytest $(PARALLEL) -q -m "$(FAST)"

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The documentation site, strictly (a warning fails it), into site/; `mkdocs serve` to read it.
# Never --quiet: it hides the warnings from --strict, which then passes a broken link.
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# The demo needs the core and the compare extra only, not the dev toolchain.
demo: $(VENV)/.installed-demo
	$(VENV)/bin/idfields $(DEMO_ARGS)

# The release files into dist/: the sdist, and a wheel built from it for this platform, with the
# compiled core where a C compiler and Python's headers are present (py3-none-any without).
# tests/test_packaging.py installs both into clean venvs and asks each which core it runs.
dist: | $(PYTHON)
	$(PYTHON) -m pip install -q build
	rm -rf $(DIST)
	$(PYTHON) -m build --outdir $(DIST) .

bench: $(VENV)/.installed-bench
	$(PYTHON) -m benchmarks --out bench-out

bench-quick: $(VENV)/.installed-bench
	$(PYTHON) -m benchmarks --quick --out bench-out

# Rewrites the benchmark tables (between the bench markers of docs/reference/benchmarks.md and
# README.md) from bench-out/report.json of `make bench`.
bench-docs: $(VENV)/.installed-bench
	$(PYTHON) -m benchmarks.docs_page --report bench-out/report.json --page docs/reference/benchmarks.md --readme README.md

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
