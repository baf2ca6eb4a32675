# Sluice — the two commands of the README are `make up` and `make test`.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: install up down test test-unit lint bench clean

# Editable in compat mode: a .pth path entry instead of setuptools' import finder, which costs
# every `sluice` call about 15 ms of start (issue 17, docs/benchmarks.md). setuptools calls the
# mode transitional; where it is gone, the default editable install is used.
$(STAMP): pyproject.toml Makefile
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' --config-settings editable_mode=compat \
	  || $(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/python -m infra.kafka fetch
	touch $(STAMP)

# The C exec helper a run's supervisor starts commands through (docs/node-daemon.md, "The exec
# helper"); without a C compiler nothing is built and commands start through Python.
HELPER  := agents/node/helper/sluice-exec
$(HELPER): agents/node/helper/sluice_exec.c agents/node/exec_helper.py infra/c_build.py $(STAMP)
	$(BIN)/python -m agents.node.exec_helper

# The sluice front (docs/slurm-commands.md, "How fast a command starts"): bin/sluice becomes a
# small C program that hands the commands scripts loop over (submit, queue, cancel...) to a warm
# per-user Python process and runs the Python CLI for everything else; without a C compiler
# bin/sluice stays pip's Python entry script.
FRONT   := $(VENV)/.front-built
$(FRONT): cli/shim/sluice_front.c cli/front_build.py infra/c_build.py $(STAMP)
	$(BIN)/python -m cli.front_build $(BIN)/sluice
	touch $(FRONT)

install: $(STAMP) $(HELPER) $(FRONT)

## The whole system on this machine: a local Kafka broker (unless KAFKA_BOOTSTRAP answers),
## the worker, the projections and 4 node daemons. `make down` stops it.
up: install
	$(BIN)/sluice up

down: $(STAMP)
	$(BIN)/sluice down

## Every test; the pytest fixture starts a Kafka broker (or uses KAFKA_BOOTSTRAP).
test: install
	$(BIN)/pytest -q

test-unit: install
	$(BIN)/pytest -q tests/unit

lint: $(STAMP)
	$(BIN)/python -m schemas.codegen --check
	$(BIN)/ruff check .
	$(BIN)/mypy schemas scheduler streams agents projections cli sim infra

## Every benchmark prints its figures (docs/benchmarks.md keeps the latest). The broker ones use
## KAFKA_BOOTSTRAP or start a local broker themselves.
BENCHES := bench_codec bench_placement bench_pass bench_carry bench_sim bench_replay \
           bench_projection_lag bench_submit bench_failover bench_views_memory study_topology
bench: $(STAMP)
	@for b in $(BENCHES); do \
	  if [ -f benchmarks/$$b.py ]; then echo "== $$b"; $(BIN)/python benchmarks/$$b.py || exit 1; fi; \
	done

clean:
	rm -rf $(VENV) build *.egg-info
