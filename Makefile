# nb_agents: the two commands are `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m nb_agents.demo $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff format --check nb_agents tests
	$(BIN)/ruff check nb_agents tests

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	bash scripts/ensure_postgres.sh
	$(BIN)/pytest -q

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
