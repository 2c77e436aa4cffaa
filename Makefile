# The two quick-start commands: `make demo` and `make test`. Each builds .venv and installs what it needs there:
# the demo only the core (Python packages with wheels: no compiler, no system library), the suite every engine's
# driver, the test tools and the system packages the tests use.
PYTHON ?= python3
VENV := .venv
CORE := $(VENV)/.core-installed
ALL := $(VENV)/.all-installed
# The C extensions are compiled by pip install (where a compiler is found): a change to their source installs again.
SOURCES := pyproject.toml setup.py src/maximus/engines/_pump_core.h src/maximus/engines/_libpq_pump.c \
	src/maximus/engines/_mariadb_pump.c src/maximus/workloads/tpcc/_draws.c src/maximus/workloads/tpcc/_profiles.c \
	src/maximus/workloads/tpcc/_profiles.h src/maximus/workloads/tpcc/_profiles_sqlite.h \
	src/maximus/workloads/tpcc/_profiles_libpq.h

.PHONY: demo test lint bytecode system-packages bench clean

$(VENV)/bin/python:
	bash scripts/python-venv $(PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip

$(CORE): $(VENV)/bin/python $(SOURCES)
	$(VENV)/bin/pip install --quiet -e .
	touch $(CORE)

# all: psycopg and mysqlclient (which compiles against libmariadb-dev: scripts/system-packages); test: the tools.
$(ALL): $(VENV)/bin/python $(SOURCES)
	$(VENV)/bin/pip install --quiet -e '.[all,test]'
	touch $(ALL) $(CORE)

demo: $(CORE) bytecode
	$(VENV)/bin/maximus demo

# Every worker process Maximus starts (a run's terminals, a build's loaders) imports it afresh: compiled here
# once, where PYTHONDONTWRITEBYTECODE in the environment would have each of them compile it again.
bytecode: $(CORE)
	$(VENV)/bin/python -m compileall -q src

# As root on a fresh Debian machine this installs what the suite needs (scripts/system-packages); an empty
# cache directory of its own makes each run meet what a fresh machine does (the PostgreSQL knob catalogue).
# pip keeps its own cache, where the fresh-install test finds the core's wheels (tests/test_fresh_install.py).
test: system-packages $(ALL) lint bytecode
	PIP_CACHE_DIR="$${PIP_CACHE_DIR:-$$($(VENV)/bin/pip cache dir 2>/dev/null)}" && export PIP_CACHE_DIR && \
	XDG_CACHE_HOME="$$(mktemp -d)" && trap 'rm -rf "$$XDG_CACHE_HOME"' EXIT && export XDG_CACHE_HOME && \
		$(VENV)/bin/python -m pytest -q --timeout=300 -n 2 --dist loadfile

# ruff (unused and undefined names, line length), import-linter (the layers of the README's architecture) and
# mypy (the types of src/, pyproject.toml's [tool.mypy])
lint: $(ALL)
	$(VENV)/bin/ruff check --quiet src tests bench
	$(VENV)/bin/lint-imports --no-cache > /dev/null || $(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy --no-error-summary

system-packages:
	bash scripts/system-packages

bench: $(ALL)
	$(VENV)/bin/python bench/sqlite_tpcc.py

clean:
	rm -rf $(VENV) maximus-work
