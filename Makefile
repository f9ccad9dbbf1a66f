# distributor.core: set-up, build and test entry points.
#
#   make demo   install requirements.txt into .build/demo-venv, build the collection, publish the example bundle
#   make test   unit tests, release lint, playbook integration tests, ansible-test sanity, molecule
#   make bench  benchmarks against cp, rsync, sftp and aws s3 sync (not part of make test)
#
# Everything runs from .venv (created from requirements-test.txt) and uses the collection as a
# user gets it: built with ansible-galaxy and installed under .build/collections.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=
# The slowest tests of a run, so that CI's log shows where its minutes go.
PYTEST_DURATIONS ?= --durations=12

VENV := $(CURDIR)/.venv
VENV_BIN := $(VENV)/bin
VENV_STAMP := $(VENV)/.distributor-installed
BUILD := $(CURDIR)/.build
DIST := $(BUILD)/dist
COLLECTIONS := $(BUILD)/collections
INSTALLED := $(COLLECTIONS)/ansible_collections/distributor/core
SANITY_ROOT := $(BUILD)/sanity/ansible_collections/distributor/core
DEMO_DIR ?= $(BUILD)/demo

VERSION := $(shell sed -n 's/^version:[[:space:]]*//p' galaxy.yml)
TARBALL := $(DIST)/distributor-core-$(VERSION).tar.gz

# Tools from .venv come first; tests start ansible-playbook, ansible-runner and moto from PATH.
export PATH := $(VENV_BIN):$(PATH)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# $(call pytest,DIR): pytest on DIR; a missing or still empty DIR is reported, not an error.
define pytest
	@if [ ! -d $(1) ]; then echo "==> $(1): no such directory, nothing to run"; exit 0; fi; \
	t0=$$(date +%s); rc=0; \
	$(VENV_BIN)/python -m pytest $(1) -n $(PYTEST_WORKERS) -q $(PYTEST_DURATIONS) $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "==> $(1): no tests collected yet"; rc=0; fi; \
	echo "==> $(1) finished in $$(( $$(date +%s) - t0 ))s (exit $$rc)"; \
	exit $$rc
endef

.PHONY: help venv collection unit integration sanity molecule lint test demo bench changelog schemas clean

help:
	@echo "make demo         publish the example bundle (installs only requirements.txt, in .build/demo-venv)"
	@echo "make test         unit tests, sanity, integration (playbook) tests, molecule"
	@echo "make bench        speed and memory benchmarks against cp/rsync/sftp/aws (BENCH_ARGS=--quick)"
	@echo "make venv         create .venv from requirements-test.txt"
	@echo "make collection   build the collection and install it under .build/collections"
	@echo "make lint         galaxy-importer on the tarball and ansible-lint --profile production"
	@echo "make unit | integration | sanity | molecule | changelog | clean"

# ---------------------------------------------------------------------------------------------
# Environment

venv: $(VENV_STAMP)

$(VENV_STAMP): requirements-test.txt requirements.txt
	@if [ ! -x $(VENV_BIN)/python ]; then $(PYTHON) -m venv $(VENV); fi
	$(VENV_BIN)/python -m pip install --quiet -r requirements-test.txt
	@touch $@

# ---------------------------------------------------------------------------------------------
# Build: the tarball ansible-galaxy makes, installed as a user would install it.

collection: venv
	@rm -rf $(DIST) $(INSTALLED)
	$(VENV_BIN)/ansible-galaxy collection build --force --output-path $(DIST) .
	$(VENV_BIN)/ansible-galaxy collection install --force --offline -p $(COLLECTIONS) $(TARBALL)
collection: export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)

# ---------------------------------------------------------------------------------------------
# Tests

# Unit tests import the source tree (no build needed) as ansible_collections.distributor.core;
# tests/conftest.py links it into that layout under .build/src.
unit: venv
	$(call pytest,tests/unit)

# Integration tests run the real ansible-playbook against the installed collection.
integration: collection
	$(call pytest,tests/integration)
integration: export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
integration: export DISTRIBUTOR_COLLECTIONS_PATH := $(COLLECTIONS)

# ansible-test needs the collection at .../ansible_collections/distributor/core: copy the files
# git knows about (tracked, plus new files that are not ignored) there. It creates a virtual
# environment per test and bootstraps pip with a get-pip script it would download from a host we
# cannot reach; tests/sanity/get_pip.py, placed in its cache, does the same from ensurepip + PyPI.
sanity: venv
	@# Start from an empty copy, but keep ansible-test's output directory: it holds the virtual
	@# environment ansible-test delegates to, which is slow to create.
	@rm -rf $(BUILD)/sanity-output
	@if [ -d $(SANITY_ROOT)/tests/output ]; then mv $(SANITY_ROOT)/tests/output $(BUILD)/sanity-output; fi
	@rm -rf $(SANITY_ROOT) && mkdir -p $(SANITY_ROOT)/tests
	@if [ -d $(BUILD)/sanity-output ]; then mv $(BUILD)/sanity-output $(SANITY_ROOT)/tests/output; fi
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git ls-files -z --cached --others --exclude-standard \
			| rsync -a --from0 --files-from=- ./ $(SANITY_ROOT)/; \
	else \
		rsync -a --exclude-from=.gitignore --exclude=.git ./ $(SANITY_ROOT)/; \
	fi
	@# ansible-test lists content with git from the nearest .git upwards; this repository ignores
	@# .build, so the copy gets a repository of its own (files untracked: listed, never committed).
	@git -C $(SANITY_ROOT) init --quiet
	@pip_version=$$($(VENV_BIN)/python -c "$$GET_PIP_VERSION"); \
		cache="$$HOME/.ansible/test/cache/get_pip_$${pip_version//./_}.py"; \
		mkdir -p "$$(dirname "$$cache")" && cp tests/sanity/get_pip.py "$$cache"; \
		echo "==> ansible-test bootstraps pip $$pip_version with $$cache"
	@t0=$$(date +%s); \
	python_version=$$($(VENV_BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	cd $(SANITY_ROOT) && $(VENV_BIN)/ansible-test sanity --venv --python $$python_version --color no; \
	echo "==> sanity finished in $$(( $$(date +%s) - t0 ))s"

# Prints the pip version ansible-test installs in its virtual environments (e.g. 24.2).
define GET_PIP_VERSION
import os, re, ansible_test
source = os.path.join(os.path.dirname(ansible_test.__file__), '_internal', 'python_requirements.py')
with open(source) as f:
    print(re.search(r"\bpip='([0-9.]+)'", f.read()).group(1))
endef
export GET_PIP_VERSION

# The molecule scenarios live in extensions/molecule (collection layout); molecule finds them
# when it runs from the collection root.
molecule: collection
	@if [ ! -d extensions/molecule ]; then echo "==> extensions/molecule: no scenario yet, nothing to run"; exit 0; fi; \
	t0=$$(date +%s); \
	$(VENV_BIN)/molecule test --all; \
	echo "==> molecule finished in $$(( $$(date +%s) - t0 ))s"
molecule: export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)

# The JSON Schemas live in plugins/module_utils/_distributor/schema_documents.py (Ansible ships only
# Python to the hosts that run modules); this writes them as files for people and other tools.
schemas: collection
	PYTHONPATH=$(COLLECTIONS) $(VENV_BIN)/python -c "$$EXPORT_SCHEMAS"

define EXPORT_SCHEMAS
import json
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.schema_documents import SCHEMAS
for name, schema in SCHEMAS.items():
    with open("schemas/%s.schema.json" % name, "w") as handle:
        handle.write(json.dumps(schema, indent=2) + "\n")
endef
export EXPORT_SCHEMAS

changelog: venv
	$(VENV_BIN)/antsibull-changelog lint

# ---------------------------------------------------------------------------------------------
# Release checks: what Galaxy runs on an upload (galaxy-importer on the built tarball) and
# ansible-lint's production profile on the repository; either failing, or the importer printing
# a warning, fails `make lint`. The tools live in .build/lint-tools, a virtual environment of
# their own (tests/lint/requirements.txt): they pin ansible-core and friends, which .venv must
# not have changed. galaxy-importer would also run ansible-test sanity in a container image;
# tests/lint/galaxy-importer.cfg turns that off (no docker/podman, no network here), and
# `make sanity` runs ansible-test sanity itself.

LINT_TOOLS := $(BUILD)/lint-tools
LINT_DIST := $(BUILD)/lint

$(LINT_TOOLS)/.installed: tests/lint/requirements.txt
	@if [ ! -x $(LINT_TOOLS)/bin/python ]; then $(PYTHON) -m venv $(LINT_TOOLS); fi
	$(LINT_TOOLS)/bin/python -m pip install --quiet -r tests/lint/requirements.txt
	@touch $@

lint: venv $(LINT_TOOLS)/.installed
	$(VENV_BIN)/antsibull-changelog lint
	@rm -rf $(LINT_DIST) && mkdir -p $(LINT_DIST)
	$(VENV_BIN)/ansible-galaxy collection build --force --output-path $(LINT_DIST) .
	cd $(LINT_DIST) && PATH=$(LINT_TOOLS)/bin:$$PATH $(LINT_TOOLS)/bin/python -m galaxy_importer.main $(notdir $(TARBALL)) 2>&1 | tee importer.log
	@if grep -Eq '^(WARNING|ERROR)' $(LINT_DIST)/importer.log; then echo "==> galaxy-importer reported the problems above"; exit 1; fi
	PATH=$(LINT_TOOLS)/bin:$$PATH $(LINT_TOOLS)/bin/ansible-lint --profile production
	@# The execution environment example of the docs: its build context (no container runtime
	@# needed) and the dependencies ansible-builder collects from the collection as installed.
	$(LINT_TOOLS)/bin/ansible-builder create -f examples/execution-environment/execution-environment.yml \
		-c $(LINT_DIST)/ee
	$(VENV_BIN)/ansible-galaxy collection install --force --offline -p $(LINT_DIST)/installed $(LINT_DIST)/$(notdir $(TARBALL))
	$(LINT_TOOLS)/bin/ansible-builder introspect --sanitize $(LINT_DIST)/installed
lint: export GALAXY_IMPORTER_CONFIG := $(CURDIR)/tests/lint/galaxy-importer.cfg

# Fast failures first: unit tests and sanity take seconds (sanity about a minute the first time,
# while ansible-test creates its virtual environments); playbook tests and molecule take minutes.
test: venv
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory sanity
	$(MAKE) --no-print-directory integration
	$(MAKE) --no-print-directory molecule

# ---------------------------------------------------------------------------------------------
# Demo: publish the example bundle to a local directory through ansible-playbook, then review a
# change to it with --check --diff and publish exactly the reviewed plan.

# The demo needs only what a user installs (requirements.txt), not the test toolchain: its own
# virtual environment, .build/demo-venv, and its own build of the collection. Every command it
# prints can be copied and run again from the repository root, as it is printed.
DEMO_VENV := $(BUILD)/demo-venv
DEMO_COLLECTIONS := $(BUILD)/demo-collections
# Shown relative to the repository root: the commands are read as well as run.
demo_here = $(patsubst $(CURDIR)/%,%,$(abspath $(1)))
DEMO_BUNDLE = $(call demo_here,$(DEMO_DIR))/bundle
DEMO_PLAYBOOK = ANSIBLE_COLLECTIONS_PATH=$(call demo_here,$(DEMO_COLLECTIONS)) $(call demo_here,$(DEMO_VENV))/bin/ansible-playbook \
	-i localhost, playbooks/demo.yml$(if $(filter $(BUILD)/demo,$(DEMO_DIR)),, -e distributor_demo_dir=$(abspath $(DEMO_DIR)))

$(DEMO_VENV)/.installed: requirements.txt
	@if [ ! -x $(DEMO_VENV)/bin/python ]; then $(PYTHON) -m venv $(DEMO_VENV); fi
	$(DEMO_VENV)/bin/python -m pip install --quiet -r requirements.txt
	@touch $@

# examples/bundle holds its manifest.json (created 11:55), so the working copy keeps it on every
# run. distributor_manifest derives the `created` of a changed bundle from the newest modification
# time of its files: the demo stamps the example 11:55 and the change 16:30, as a producer would,
# so that the change lands in the same dated bundle path and the demo prints the same every run.
demo: $(DEMO_VENV)/.installed
	@rm -rf $(DEMO_COLLECTIONS) && mkdir -p $(DEMO_COLLECTIONS)
	@$(DEMO_VENV)/bin/ansible-galaxy collection build --force --output-path $(DEMO_COLLECTIONS) . >/dev/null
	@$(DEMO_VENV)/bin/ansible-galaxy collection install --force --offline -p $(DEMO_COLLECTIONS) \
		$(DEMO_COLLECTIONS)/$(notdir $(TARBALL)) >/dev/null
	@echo "==> 1. Publish a working copy of examples/bundle (again: a skip, changed=0)"
	rm -rf $(DEMO_BUNDLE) && mkdir -p $(DEMO_BUNDLE) && cp examples/bundle/* $(DEMO_BUNDLE)/
	touch -d 2026-06-04T11:55:00Z $(DEMO_BUNDLE)/*
	$(DEMO_PLAYBOOK)
	@echo "==> 2. Change the working copy: report.md edited, notes.md removed, summary.md added"
	sed -i 's/50k/52k/; s/\[notes\](notes.md#method)/[summary](summary.md)/' $(DEMO_BUNDLE)/report.md
	rm $(DEMO_BUNDLE)/notes.md
	printf '# Summary\n\nRevenue for the year: 135k.\n' > $(DEMO_BUNDLE)/summary.md
	touch -d 2026-06-04T16:30:00Z $(DEMO_BUNDLE)/report.md $(DEMO_BUNDLE)/summary.md
	@echo "==> 3. Review it: the dry run lists the outputs before and after, then a diff of each page"
	$(DEMO_PLAYBOOK) --check --diff
	@echo "==> 4. Publish the reviewed plan: a run whose plan differs fails with plan_changed"
	$(DEMO_PLAYBOOK) -e distributor_demo_expect_plan_digest=$$(cat $(call demo_here,$(DEMO_DIR))/plan-digest)
	@echo
	@echo "Open the published report:  file://$$(cat $(DEMO_DIR)/primary-page)"
	@echo "Every command above runs again as printed. make demo again: step 1 is a skip (changed=0),"
	@echo "as the destination holds the newer change, and the publishes of steps 3 and 4 are skips too."
demo: export ANSIBLE_NOCOLOR := 1
demo: export ANSIBLE_COLLECTIONS_PATH := $(DEMO_COLLECTIONS)

# ---------------------------------------------------------------------------------------------
# Benchmarks (not part of `make test`): distributor against cp, rsync, sftp and `aws s3 sync` on
# 127.0.0.1; about 20 minutes on 2 cores (the 100,000-file cases are most of it), BENCH_ARGS=--quick
# for a few minutes. awscli goes into a virtual environment of its own: it pins botocore, which
# .venv must not have changed; so does the ansible package, for the ansible.posix it carries
# (playbook_sync.py runs it under .venv's ansible-playbook).
# See benchmarks/README.md.

BENCH_TOOLS := $(BUILD)/bench-tools
BENCH_ARGS ?=

$(BENCH_TOOLS)/.installed: benchmarks/requirements.txt
	@if [ ! -x $(BENCH_TOOLS)/bin/python ]; then $(PYTHON) -m venv $(BENCH_TOOLS); fi
	$(BENCH_TOOLS)/bin/python -m pip install --quiet -r benchmarks/requirements.txt
	@touch $@

bench: collection $(BENCH_TOOLS)/.installed
	@date -u +%Y%m%dT%H%M%S > $(BUILD)/bench-started
	$(VENV_BIN)/python benchmarks/run.py --aws $(BENCH_TOOLS)/bin/aws $(BENCH_ARGS)
	$(VENV_BIN)/python benchmarks/rows.py $(filter --quick,$(BENCH_ARGS))
	$(VENV_BIN)/python benchmarks/first_publish.py $(filter --quick,$(BENCH_ARGS))
	$(VENV_BIN)/python benchmarks/scale.py $(filter --quick,$(BENCH_ARGS))
	$(VENV_BIN)/python benchmarks/shared_root.py $(filter --quick,$(BENCH_ARGS))
	$(VENV_BIN)/python benchmarks/s3_large.py --aws $(BENCH_TOOLS)/bin/aws $(if $(filter --quick,$(BENCH_ARGS)),--size 256 --repeat 1)
	$(VENV_BIN)/python benchmarks/s3_latency.py --aws $(BENCH_TOOLS)/bin/aws $(filter --quick,$(BENCH_ARGS))
	$(VENV_BIN)/python benchmarks/awx_results.py $(filter --quick,$(BENCH_ARGS))
	$(VENV_BIN)/python benchmarks/jump_host.py $(filter --quick,$(BENCH_ARGS))
	$(VENV_BIN)/python benchmarks/release_change.py $(filter --quick,$(BENCH_ARGS))
	$(VENV_BIN)/python benchmarks/fleet_switch.py $(filter --quick,$(BENCH_ARGS))
	$(VENV_BIN)/python benchmarks/release_disk_floor.py
	$(VENV_BIN)/python benchmarks/playbook_sync.py --posix $(BENCH_TOOLS) $(filter --quick,$(BENCH_ARGS))
	$(BENCH_TOOLS)/bin/python benchmarks/plot.py
	$(VENV_BIN)/python benchmarks/targets.py --since $$(cat $(BUILD)/bench-started)
bench: export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)

clean:
	rm -rf $(BUILD) tests/output .pytest_cache
	find . -path ./.venv -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
