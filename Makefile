# The two quick-start commands: `make demo` and `make test`. Each builds .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test lint bytecode system-packages bench clean

# The C extensions are compiled by pip install: a change to their source installs again.
$(STAMP): pyproject.toml setup.py src/maximus/engines/_pump_core.h src/maximus/engines/_libpq_pump.c \
		src/maximus/engines/_mariadb_pump.c src/maximus/workloads/tpcc/_draws.c
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP) bytecode
	$(VENV)/bin/maximus demo

# Every worker process Maximus starts (a run's terminals, a build's loaders) imports it afresh: compiled here
# once, where PYTHONDONTWRITEBYTECODE in the environment would have each of them compile it again.
bytecode: $(STAMP)
	$(VENV)/bin/python -m compileall -q src

# As root on a fresh Debian machine this installs what the suite needs (scripts/system-packages); an empty
# cache directory of its own makes each run meet what a fresh machine does (the PostgreSQL knob catalogue).
test: system-packages $(STAMP) lint bytecode
	XDG_CACHE_HOME="$$(mktemp -d)" && trap 'rm -rf "$$XDG_CACHE_HOME"' EXIT && export XDG_CACHE_HOME && \
		$(VENV)/bin/python -m pytest -q --timeout=300 -n 2 --dist loadfile

# ruff (unused and undefined names, line length) and import-linter (the layers of the README's architecture)
lint: $(STAMP)
	$(VENV)/bin/ruff check --quiet src tests bench
	$(VENV)/bin/lint-imports --no-cache > /dev/null || $(VENV)/bin/lint-imports --no-cache

system-packages:
	bash scripts/system-packages

bench: $(STAMP)
	$(VENV)/bin/python bench/sqlite_tpcc.py

clean:
	rm -rf $(VENV) maximus-work
