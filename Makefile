# nb_agents: the two commands are `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.demo-installed
PORT ?= 8888

# an editable install does not install pyproject's data-files: enable nb_agents' Jupyter server
# extension in the venv by hand, as a regular install does (saved notebooks keep records)
ENABLE_EXTENSION = mkdir -p $(VENV)/etc/jupyter/jupyter_server_config.d && \
	cp jupyter-config/jupyter_server_config.d/nb_agents.json $(VENV)/etc/jupyter/jupyter_server_config.d/

.PHONY: demo demo-cli test lint typecheck pytest nbval browser interop mcp chromium postgres bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,e2e]"
	$(ENABLE_EXTENSION)
	touch $(STAMP)

# the demo needs nb_agents, JupyterLab (the `jupyter` extra), the MCP SDK (notebooks/mcp.ipynb) and
# OpenTelemetry (the `otel` extra, notebooks/traces.ipynb), not the test tooling; tests/test_notebooks.py runs every notebook with only this install importable
$(DEMO_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[jupyter,mcp,otel]"
	$(ENABLE_EXTENSION)
	touch $(DEMO_STAMP)

# JupyterLab on 127.0.0.1:$(PORT) with notebooks/quickstart.ipynb (prints the URL with its token)
demo: $(DEMO_STAMP)
	PORT=$(PORT) bash scripts/lab_demo.sh

# the terminal banking demo (ARGS=--yes approves without asking)
demo-cli: $(DEMO_STAMP)
	$(BIN)/python -m nb_agents.demo $(ARGS)

chromium:
	bash scripts/ensure_chromium.sh

postgres:
	bash scripts/ensure_postgres.sh

lint: $(STAMP)
	$(BIN)/ruff format --check nb_agents tests benchmarks scripts examples
	$(BIN)/ruff check nb_agents tests benchmarks scripts examples

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) postgres
	$(BIN)/pytest -q -m "not browser" --ignore=tests/test_notebooks.py

nbval: $(STAMP)
	$(BIN)/pytest -q tests/test_notebooks.py

browser: $(STAMP) chromium
	$(BIN)/pytest -q -m browser tests/browser

test: lint typecheck pytest nbval browser

# only the Genkit interop tests (they also run in `pytest`)
interop: $(STAMP) postgres
	$(BIN)/pytest -q tests/interop

# only the MCP tests (they also run in `pytest`; the npm servers install from tests/mcp/js)
mcp: $(STAMP)
	$(BIN)/pytest -q tests/mcp

# benchmarks against the peers (not part of `make test`; ARGS=--quick for a smoke run)
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -r benchmarks/requirements-profile.txt
	$(BIN)/python benchmarks/run.py $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache tests/interop/.cache tests/mcp/.cache
