# The two quick-start commands: `make demo` and `make test`. Each builds .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

# The C extensions are compiled by pip install: a change to their source installs again.
$(STAMP): pyproject.toml setup.py src/maximus/engines/_libpq_pump.c src/maximus/workloads/tpcc/_draws.c
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/maximus demo

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q --timeout=300

bench: $(STAMP)
	$(VENV)/bin/python bench/sqlite_tpcc.py

clean:
	rm -rf $(VENV) maximus-work
