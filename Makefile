# The two commands of the README:
#   make setup   install what is missing, build RocksDB, create .venv, run the main job (small)
#   make test    the same set-up when missing, then the whole test suite and RocksDB's own
#                suites over every engine (rxlab conformance, on a Debug test build made once)
# And for a developer's loop (docs/contributing.md):
#   make check   lint, the layers contract and the unit tests that run no RocksDB (under 3 minutes)
# And for the toolchain study (notebook 70):
#   make toolchains   clang, lld and llvm, then gcc/clang/clang+LTO builds of two RocksDB versions (hours)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
SCALE  ?= small
# The main job's figures: a folder of the user's own (ignored by git); figures/ is the committed set,
# regenerated only by an explicit `rxlab report`.
FIGURES ?= figures-local
PYTEST_ARGS ?=
CONFORMANCE_ARGS ?=

.PHONY: setup test check deps rocksdb venv ext main lab bench conformance docs docs-serve clean toolchains

setup: ext main

# The Debug test build first (cached: reused once made), so that
# tests/test_conformance.py runs RocksDB's tests for real; then pytest, then
# the conformance suites. Both run even if the first fails; either fails the target.
test: ext
	$(VENV)/bin/rxlab conformance --build-only $(CONFORMANCE_ARGS)
	@fail=0; $(PY) -m pytest $(PYTEST_ARGS) || fail=1; \
	  $(VENV)/bin/rxlab conformance $(CONFORMANCE_ARGS) || fail=1; \
	  exit $$fail

# The fast loop: ruff, the layers contract, then the tests not marked `rocksdb` (tests/conftest.py says
# which are). It builds nothing: it uses the venv `make setup` made, as it is. ruff looks at the Python
# files changed since the last commit and the new ones (the tree as a whole is not clean under today's
# ruff yet): `make check RUFF_FILES="rxlab tests"` looks at everything.
RUFF_FILES ?= $(shell { git diff --name-only --diff-filter=d HEAD -- '*.py'; git ls-files -o --exclude-standard -- '*.py'; } 2>/dev/null | sort -u)
check:
	@test -x $(VENV)/bin/ruff || { echo "make check: no $(VENV) with the test tools: run make setup first" >&2; exit 1; }
	@if [ -n "$(strip $(RUFF_FILES))" ]; then echo "ruff check (changed files)"; $(VENV)/bin/ruff check $(RUFF_FILES); \
	  else echo "ruff: no Python file changed since the last commit"; fi
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q -m "not rocksdb" $(PYTEST_ARGS)

conformance: ext
	$(VENV)/bin/rxlab conformance $(CONFORMANCE_ARGS)

deps:
	@bash .ci/deps.sh

rocksdb: deps
	@# -S: the standard library only (no site-packages, so no editable install's import hook)
	@$(PYTHON) -S -m rxlab.core.builds build >/dev/null

$(VENV)/.deps: pyproject.toml | deps
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "scikit-build-core>=0.10" "pybind11>=2.12" ninja cmake
	touch $@

venv: $(VENV)/.deps

# (Re)build the extension and the plugin against the RocksDB build; ninja
# makes this a no-op when nothing changed.
ext: rocksdb venv
	$(PY) -m pip install -q --no-build-isolation -e ".[test,lab,dist,docs,browser]"
	@# papermill runs the notebooks on a kernel named python3: this venv's.
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@# JupyterLab of this venv: 127.0.0.1, and root allowed (the set-up runs as root on a new machine).
	$(VENV)/bin/rxlab lab --configure >/dev/null

# The toolchain study's matrix (notebook 70): clang and lld first, then gcc, clang and clang+LTO
# builds of each version, each with rxlab's module compiled against it; 6 to 20 minutes a build on
# 2 cores, niced. A finished build or module is reused.
TOOLCHAIN_VERSIONS ?= 9.10.0 9.11.2
toolchains: ext
	@bash .ci/deps.sh toolchains
	@set -e; for v in $(TOOLCHAIN_VERSIONS); do for t in "gcc" "clang" "clang --lto"; do \
	  prefix=$$(nice -n 19 $(VENV)/bin/rxlab build-rocksdb --version $$v --cc $$t); \
	  nice -n 19 $(VENV)/bin/rxlab build-module $$(basename $$prefix); \
	done; done

# The main job: every backend through the release db_bench, then the
# IO-efficiency study (notebook 10) at $(SCALE) scale; the executed notebook
# lands in notebooks/out/, its figures in $(FIGURES)/ (not the committed figures/).
main:
	$(VENV)/bin/rxlab compare --scale $(SCALE)
	$(VENV)/bin/rxlab report --scale $(SCALE) --only 10 --figures $(FIGURES)

# JupyterLab on 127.0.0.1 with a token, notebook 00 open; prints the URL to open (as root too).
lab: ext
	$(VENV)/bin/rxlab lab

bench: ext
	$(VENV)/bin/rxlab selfcheck backends

# The documentation site: docs/ built into site/ (warnings are errors), or served on localhost:8000.
# (The two variables silence the toolchain's banners about its own future, not warnings about the pages.)
docs docs-serve: export NO_MKDOCS_2_WARNING = 1
docs docs-serve: export DISABLE_MKDOCS_2_WARNING = true
docs: ext
	$(VENV)/bin/mkdocs build --strict --site-dir site

docs-serve: ext
	$(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

clean:
	rm -rf build $(VENV)
