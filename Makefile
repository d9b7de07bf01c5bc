# Streamhouse: every target creates/updates .venv itself, so a fresh clone needs only `make demo` / `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV_VERSION := 0.13.9
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help prereqs install test test-fast lint format demo dagster bench bench-lakehouse broker-start broker-stop clean

help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

prereqs:
	@$(PYTHON) scripts/check_prereqs.py

$(STAMP): pyproject.toml constraints.txt | prereqs
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet "uv==$(UV_VERSION)"
	$(BIN)/uv pip install --python $(BIN)/python --constraint constraints.txt -e ".[dev]"
	@touch $(STAMP)

install: prereqs $(STAMP) ## Create .venv and install everything (pinned)

test: install ## Lint, then run the whole test suite (real broker, Spark and Delta)
	$(BIN)/ruff check .
	$(BIN)/pytest $(PYTEST_ARGS)

test-fast: install ## The suite without tests marked slow
	$(BIN)/pytest -m "not slow" $(PYTEST_ARGS)

lint: install ## ruff check + format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install ## Apply ruff formatting and safe fixes
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

demo: install ## Run the main job end to end on the embedded defaults and print a summary
	$(BIN)/streamhouse demo

dagster: install ## Open the Dagster UI (webserver + daemon) on 127.0.0.1:3000
	DAGSTER_HOME=$${DAGSTER_HOME:-$(CURDIR)/.state/dagster} ; mkdir -p $$DAGSTER_HOME ; \
	  DAGSTER_HOME=$$DAGSTER_HOME $(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

bench: install ## Run the quick benchmark set (writes benchmarks/results/*.json)
	$(BIN)/python -m benchmarks.run_all

bench-lakehouse: install ## Run the full lakehouse benchmarks: bronze, gold 1M/5M/20M, incremental (~15 min)
	$(BIN)/python -m benchmarks.run_lakehouse

broker-start: install ## Start the embedded Kafka broker in the background
	$(BIN)/streamhouse broker start

broker-stop: install ## Stop the embedded Kafka broker
	$(BIN)/streamhouse broker stop

clean: ## Remove .venv, local state and caches
	rm -rf $(VENV) .state .pytest_cache .ruff_cache spark-warehouse
