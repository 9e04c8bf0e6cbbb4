# The two commands: `make demo` (site playbook against the built-in lab) and
# `make test` (every test and quality gate). Both install what they need.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

ANSIBLE_VERSION := 12.3.0
BUILD := $(CURDIR)/.build
VENV := $(BUILD)/venv
PY := $(VENV)/bin/python
REQ_HASH := $(shell sha256sum requirements.txt | cut -c1-12)
VENV_STAMP := $(VENV)/.requirements-$(REQ_HASH)
COLL_STAMP := $(BUILD)/collections/.ansible-$(ANSIBLE_VERSION)

export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(BUILD)/collections
export PYTHONPATH := $(BUILD)/collections:$(CURDIR)

.PHONY: help setup host venv collections images test demo demo-down bench mutation clean

help:
	@echo "make demo       run playbooks/site.yml against the built-in lab and print a per-node summary"
	@echo "make test       run every test and quality gate (installs what it needs)"
	@echo "make demo-down  stop the lab nodes and the API stand-in left by make demo"
	@echo "make bench      time site.yml on 1-32 lab nodes and the modules; writes bench/results/ (not in make test)"
	@echo "make mutation   mutmut over the pure code, each file within MUTATION_BUDGET seconds (not in make test)"
	@echo "make clean      remove .build (venv, collections, caches); lab images stay in podman"

setup: host venv collections

host:
	@tools/setup-host.sh

venv: $(VENV_STAMP)
$(VENV_STAMP): requirements.txt
	@echo "==> venv $(VENV)"
	@rm -rf $(VENV) && python3.11 -m venv $(VENV)
	@$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt
	@touch $@

collections: $(COLL_STAMP)
$(COLL_STAMP): $(VENV_STAMP)
	@$(PY) tools/fetch-collections.py --ansible-version $(ANSIBLE_VERSION) --build-dir $(BUILD) --repo $(CURDIR)

images: setup
	@$(PY) tests/lab/labctl.py build

test: setup images
	@tools/run-tests.sh

demo: setup images
	@tools/demo.sh

demo-down:
	@tools/demo.sh down

clean:
	rm -rf $(BUILD)

BENCH_REQ_HASH := $(shell sha256sum bench/requirements.txt | cut -c1-12)
BENCH_STAMP := $(VENV)/.bench-requirements-$(BENCH_REQ_HASH)

bench: setup images $(BENCH_STAMP)
	@$(PY) bench/site_bench.py $(BENCH_ARGS)

# A new venv (requirements.txt changed) has no stamp: the bench packages go in again.
$(BENCH_STAMP): bench/requirements.txt $(VENV_STAMP)
	@$(VENV)/bin/pip install -q --disable-pip-version-check -r bench/requirements.txt
	@touch $@

MUTATION_REQ_HASH := $(shell sha256sum tools/mutation-requirements.txt | cut -c1-12)
MUTATION_STAMP := $(VENV)/.mutation-requirements-$(MUTATION_REQ_HASH)
# Seconds per file: mutants not tried by then are reported as not checked.
MUTATION_BUDGET ?= 600

# Not a gate: prints (and writes .build/mutation/report.txt) the share of mutants killed per file.
mutation: setup $(MUTATION_STAMP)
	@$(PY) tools/mutation.py --budget $(MUTATION_BUDGET) $(MUTATION_ARGS)

$(MUTATION_STAMP): tools/mutation-requirements.txt $(VENV_STAMP)
	@$(VENV)/bin/pip install -q --disable-pip-version-check -r tools/mutation-requirements.txt
	@touch $@
