# The two commands a new user needs: `make run` and `make test`. Both set up .venv first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint format bench-assembler bench bench-import bench-releases bench-bundles bench-conversations bench-scale clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(STAMP)

HOST ?= 127.0.0.1
PORT ?= 8000

## run: migrate, load the demo game, create a local admin and serve on http://$(HOST):$(PORT)
## (`make run PORT=8080` when 8000 is taken)
run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	$(BIN)/python manage.py seed_prompts
	$(BIN)/python manage.py ensure_admin
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

## test: the whole suite (PostgreSQL and Redis when reachable, else SQLite with a notice)
test: install
	$(BIN)/python scripts/run_tests.py $(ARGS)

## lint: what CI checks besides the tests
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python manage.py makemigrations --check --dry-run

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench-assembler: install
	$(BIN)/python -m benchmarks.assembler
	$(BIN)/python -m benchmarks.history

## bench: load-test the REST API under gunicorn with wrk (needs PostgreSQL, Redis and wrk);
## recreates its own database (BENCH_DATABASE_URL) and prints req/s, p50 and p99
bench: install
	$(BIN)/python scripts/bench_api.py $(ARGS)

## bench-import: time import_segments on a 1,000,000-row legacy export: rows/s and peak memory
## (needs PostgreSQL; `make bench-import ARGS="--rows 50000"` for a quick run)
bench-import: install
	$(BIN)/python scripts/bench_import.py $(ARGS)

## bench-releases: time making a release and comparing 50 scenarios at 10,000 segments
## (needs PostgreSQL; recreates its own database, BENCH_RELEASES_DATABASE_URL)
bench-releases: install
	$(BIN)/python scripts/bench_releases.py $(ARGS)

## bench-bundles: releases at 100,000 segments: a release after a one-segment change (rows
## written), the first assemble of a new release in a fresh process, comparing releases
## (needs PostgreSQL; recreates its own database, BENCH_BUNDLES_DATABASE_URL; ARGS="--core")
bench-bundles: install
	$(BIN)/python scripts/bench_bundles.py $(ARGS)

## bench-conversations: time appending and reading history at 100 and 100,000 messages
## (needs PostgreSQL; recreates its own database, BENCH_CONVERSATIONS_DATABASE_URL)
bench-conversations: install
	$(BIN)/python scripts/bench_conversations.py $(ARGS)

## bench-scale: seed a real-size game (100,000 segments, 1,000 entries, 2,000 NPCs, 50
## releases, a conversation of 100,000 messages) and one of 10,000 segments, each in its own
## PostgreSQL database (BENCH_SCALE_DATABASE_URL, recreated), and print every operation of
## issue 22 with its target, met or MISSED, through gunicorn and in process (needs Redis;
## `make bench-scale ARGS="--sizes 10000"` for a quick run, `--skip-gunicorn` without servers)
bench-scale: install
	$(BIN)/python scripts/bench_scale.py $(ARGS)

clean:
	rm -rf $(VENV) staticfiles .pytest_cache .ruff_cache .mypy_cache .hypothesis
