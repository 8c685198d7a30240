# skiff: the two set-up commands are `make up` and `make test`; both install
# what they need on a fresh Debian/Ubuntu machine (as root) and are idempotent.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= $(shell command -v python3.11 || command -v python3)
STAMP := $(VENV)/.installed

# What skiff needs to run: netlink/iptables tools, and libseccomp for seccomp.
APT_RUN := iproute2 iptables nftables conntrack kmod procps libseccomp2 ca-certificates \
	python3 python3-venv python3-dev gcc make
# What the test suite needs on top: test images, a local registry, image
# tools, etcd, a peer CRI runtime and the reference CNI plugins, shellcheck,
# and vagrant with a provider so that `vagrant validate` can check vagrant/.
APT_TEST := busybox-static docker-registry skopeo umoci etcd-server etcd-client \
	containerd runc containernetworking-plugins shellcheck psmisc jq \
	vagrant vagrant-libvirt

.PHONY: help up test lint typecheck proto proto-check deps deps-test venv check-host clean

help:
	@echo "make up    install skiff and run it on this machine (skiff up)"
	@echo "make test  install everything, then lint, type-check and run the test suite"
	@echo "make lint  ruff + mypy + import contracts;  make proto  regenerate gRPC stubs"

check-host:
	@[ "$$(id -u)" = 0 ] || { echo "skiff: run this as root (it installs packages and manages namespaces, mounts and cgroups)" >&2; exit 1; }
	@command -v apt-get >/dev/null && [ -r /etc/debian_version ] || { echo "skiff: this needs a Debian-like system with apt-get (Debian, Ubuntu)" >&2; exit 1; }

# apt-get update once per boot of this checkout's installs, then install.
deps: check-host
	@dpkg -s $(APT_RUN) >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_RUN); }

deps-test: deps
	@dpkg -s $(APT_TEST) >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(APT_TEST); }

$(STAMP): pyproject.toml
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $@

venv: $(STAMP)

proto: venv
	$(PY) -m proto.generate

proto-check: venv
	$(PY) -m proto.generate --check

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

up: deps venv
	$(VENV)/bin/skiff up $(ARGS)

# pytest exits 5 when it collected nothing; that is not a failure of the suite.
test: deps-test venv lint
	$(PY) -m pytest $(PYTEST_ARGS) || [ $$? -eq 5 ]

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
