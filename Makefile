# Two entry points for a fresh machine: `make demo` and `make test`; CI also runs `make test-slow`.
# The demo's lock, constraints.txt, is made for 3.12 (envs/demo.in), the newest Python its whole stack supports:
# pyenv's build of 3.12 where pyenv has one (its shim answers only for the versions pyenv has selected), else PATH's.
PYENV_ROOT ?= $(HOME)/.pyenv
PYTHON ?= $(or $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.12.*/bin/python3.12))),python3.12)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test typecheck test-slow test-envs install dagster docs clean

# uv installs when it can, pip when it cannot (RECALL_INSTALLER=pip|uv forces one); constraints.txt pins both.
$(STAMP): pyproject.toml constraints.txt constraints-ingest.txt scripts/install_venv.py
	$(PYTHON) scripts/install_venv.py $(VENV)
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m seed demo

PYTEST := $(BIN)/python -m pytest --basetemp=.pytest-tmp --durations=20 -n auto --dist loadfile

test: $(STAMP)
	$(BIN)/ruff check --quiet .
	$(PYTEST) -m "not slow"

# mypy over the package ([tool.mypy]) alone; make test runs it too, as one of its tests (tests/test_types.py)
typecheck: $(STAMP)
	$(BIN)/mypy

test-slow: $(STAMP)
	$(PYTEST) -m slow

# Recall's wheel into team environments made without it (envs/): installing changes none of their packages.
test-envs:
	$(PYTHON) scripts/team_envs.py --tests

dagster: $(STAMP)
	$(BIN)/recall dagster

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf .recall
