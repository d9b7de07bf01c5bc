# Streamhouse: every target creates/updates .venv itself, so a fresh clone needs only `make demo` / `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV_VERSION := 0.13.9
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help prereqs install test test-kafka test-fast chaos system-test lint format demo dagster bench bench-lakehouse broker-start broker-stop clean

# The name column is as wide as the longest target, so a new long name cannot push its row out of line.
help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' \
	  '{n[NR] = $$1; d[NR] = $$2; if (length($$1) > w) w = length($$1)} \
	   END {f = "  make %-" w "s  %s\n"; for (i = 1; i <= NR; i++) printf f, n[i], d[i]}'

prereqs:
	@$(PYTHON) scripts/check_prereqs.py

$(STAMP): pyproject.toml constraints.txt | prereqs
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet "uv==$(UV_VERSION)"
	$(BIN)/uv pip install --python $(BIN)/python --constraint constraints.txt -e ".[dev]"
	@touch $(STAMP)

install: prereqs $(STAMP) ## Create .venv and install everything (pinned)
	@$(PYTHON) scripts/delta_jars.py
	@$(PYTHON) scripts/install_kafka_broker.py
	@$(PYTHON) scripts/install_kafka_streams_tests.py
	@$(PYTHON) scripts/install_kafka_streams_bench.py
	@$(PYTHON) scripts/install_chromium.py

# Run a second time on Apache Kafka (STREAMHOUSE_BROKER_KIND=kafka): the edge runtime, exactly-once
# (including the crash mid-transaction Tansu cannot show), restore from compacted changelogs, and the
# kill -9 storms (tests/chaos, whose exactly-once trials skip on Tansu).
# A 6 s consumer session (Kafka's default is 45 s, the broker's minimum 6 s) lets each kill -9 test
# fail over in seconds instead of waiting 45 s for the dead member; everything else is Kafka's default.
# Kafka's own Streams system tests and the broker bounces (tests/system) and the local 3-node cluster
# (test_kafka_cluster.py) start Apache Kafka brokers of their own, and the peer benchmarks' hook
# (test_peers.py) builds the peers' venvs and runs a JVM: minutes each, run once, beside the main pass.
# The system tests and the cluster, mostly waits, run in a second background lane after the Parquet pass
# (scripts/test_passes.py), so the background lanes end before the main pass.
KAFKA_SYSTEM_TESTS ?= $(wildcard tests/system) $(wildcard tests/foundation/test_kafka_cluster.py)
ONLY_KAFKA_PASS := $(KAFKA_SYSTEM_TESTS) $(wildcard tests/benchmarks/test_peers.py)
KAFKA_TESTS ?= tests/edge/runtime $(wildcard tests/chaos) $(wildcard tests/benchmarks/test_peers.py)
# The Dagster kill trial is about Dagster runs, not the broker: it runs once, in the Kafka pass, which
# runs beside the longer main pass (scripts/test_passes.py).
MAIN_TEST_ARGS ?= $(if $(wildcard tests/chaos/test_dagster_kill.py),--deselect tests/chaos/test_dagster_kill.py) \
	$(foreach t,$(ONLY_KAFKA_PASS),--ignore=$(t))
KAFKA_PASS_ENV := STREAMHOUSE_BROKER_KIND=kafka STREAMHOUSE_KAFKA__SESSION_TIMEOUT_MS=6000 \
	STREAMHOUSE_KAFKA__HEARTBEAT_INTERVAL_MS=1000
# With the delta-spark jars (make install), the suite runs on native Delta; these run again without.
DELTA_TESTS ?= tests/delta tests/lakehouse/test_pipeline.py tests/lakehouse/test_incremental.py
DELTA_JARS := $(or $(STREAMHOUSE_STATE_DIR),.state)/jars/delta

test: install ## Lint, the whole suite on the embedded broker; beside it the runtime tests on Apache Kafka
	$(BIN)/ruff check .
	PYTEST_ARGS="$(PYTEST_ARGS)" MAIN_TEST_ARGS="$(MAIN_TEST_ARGS)" KAFKA_TESTS="$(KAFKA_TESTS)" \
	  KAFKA_SYSTEM_TESTS="$(KAFKA_SYSTEM_TESTS)" KAFKA_PASS_ENV="$(KAFKA_PASS_ENV)" \
	  DELTA_TESTS="$(DELTA_TESTS)" DELTA_JARS="$(DELTA_JARS)" \
	  $(BIN)/python scripts/test_passes.py

test-kafka: install ## Only the tests that run on Apache Kafka too (edge runtime, exactly-once, restore)
	$(KAFKA_PASS_ENV) $(BIN)/pytest $(KAFKA_TESTS) $(KAFKA_SYSTEM_TESTS) $(PYTEST_ARGS)

chaos: install ## Fault trials at full size (20 kill -9s, 100k events; CHAOS_SCALE=ci for small) -> docs/reliability.md
	CHAOS_SCALE=$${CHAOS_SCALE:-full} CHAOS_REPORT=docs/reliability.md $(BIN)/pytest tests/chaos $(PYTEST_ARGS)

# Kafka's own Streams system tests (smoke + EOS, Kafka's drivers from the kafka-streams test jar) against the
# edge ports of their clients, each scenario on a fresh Apache Kafka broker; SYSTEM_TESTS=short is the CI's form.
# Then streams_broker_bounce_test.py's matrix on a 3-node cluster (scripts/broker_bounce.py: 24 scenarios,
# hours on 2 cores; BOUNCE_TESTS=short is the CI's form, BOUNCE_TESTS=none skips it).
SYSTEM_TESTS ?= all
BOUNCE_TESTS ?= all
system-test: install ## Kafka's Streams system tests (smoke, EOS, broker bounces) judging the edge ports -> docs/reliability.md
	s=0; $(BIN)/python scripts/system_test.py --scenarios $(SYSTEM_TESTS) --report docs/reliability.md || s=1; \
	  if [ "$(BOUNCE_TESTS)" != none ]; then \
	    $(BIN)/python scripts/broker_bounce.py --scenarios $(BOUNCE_TESTS) --report docs/reliability.md || s=1; \
	  fi; exit $$s

test-fast: install ## The suite without tests marked slow
	$(BIN)/pytest -m "not slow" $(PYTEST_ARGS)

lint: install ## ruff check + format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install ## Apply ruff formatting and safe fixes
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

demo: install ## Run the demo into the project's lake and Dagster instance (see it with make dagster)
	$(BIN)/streamhouse demo

# The broker is started (if not running) so the Kafka lag sensor, on by default like the automation
# sensor and the nightly maintenance schedule, has topics to watch from the first tick.
dagster: install ## Open the Dagster UI (webserver + daemon, lag sensor and automation on) on 127.0.0.1:3000
	$(BIN)/streamhouse ui

bench: install ## Run the quick benchmark set (writes benchmarks/results/*.json)
	$(BIN)/python -m benchmarks.run_all

bench-lakehouse: install ## Run the full lakehouse benchmarks: bronze, gold 1M/5M/20M, incremental (~15 min)
	$(BIN)/python -m benchmarks.run_lakehouse

broker-start: install ## Start the local Kafka broker in the background (Apache Kafka where installed, else Tansu)
	$(BIN)/streamhouse broker start

broker-stop: install ## Stop the local Kafka broker (Apache Kafka keeps its topics for the next start)
	$(BIN)/streamhouse broker stop

clean: ## Remove .venv, local state and caches
	rm -rf $(VENV) .state .pytest_cache .ruff_cache spark-warehouse
