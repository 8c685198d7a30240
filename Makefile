# skiff: the two set-up commands are `make up` and `make test`; both install
# what they need on a fresh Debian/Ubuntu machine (as root) and are idempotent.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
# Optional dependencies the venv gets: the dev tools by default; the VMs of
# vagrant/ run skiff without them (`make venv EXTRAS=`).
EXTRAS ?= [dev]
PY := $(VENV)/bin/python
# The distribution's Python first: Debian's build runs skiff and its tests
# about 10% cheaper than a Python built from source with default flags, as
# pyenv builds it (pytest's collection 8.9 CPU s against 9.7 in three
# alternating runs; a pure-Python JSON loop 25% less).
PYTHON ?= $(firstword $(wildcard /usr/bin/python3.11) $(shell command -v python3.11 || command -v python3))
STAMP := $(VENV)/.installed

# What skiff needs to run: netlink/iptables tools, and libseccomp for seccomp.
APT_RUN := iproute2 iptables nftables conntrack kmod procps libseccomp2 ca-certificates haproxy \
	python3 python3-venv python3-dev gcc make
# What the test suite needs on top: test images, a local registry, image
# tools, etcd, a peer CRI runtime and the reference CNI plugins, shellcheck,
# Prometheus (tests/e2e/agent/test_up_metrics.py scrapes skiff with it; its
# own service, where systemd starts one, is left alone: the test runs its own)
# and vagrant with a provider so that `vagrant validate` can check vagrant/.
APT_TEST := busybox-static docker-registry skopeo umoci etcd-server etcd-client \
	containerd runc containernetworking-plugins shellcheck psmisc jq prometheus \
	vagrant vagrant-libvirt
# What `make test-vm` needs on top: QEMU, libvirt (its daemons are started by
# vagrant/vmnet.sh inside the VM cluster's network namespace), mmdebstrap to
# build the box, rsync and ssh for Vagrant.
APT_VM := qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-clients dnsmasq-base \
	mmdebstrap e2fsprogs rsync openssh-client vagrant vagrant-libvirt

.PHONY: print-apt-run help up test pytest test-clientlibs test-debian-apps test-vm deps-vm lint typecheck proto proto-check deps deps-test venv check-host clean

help:
	@echo "make up    install skiff and run it on this machine (skiff up)"
	@echo "make test  install everything, then lint, type-check and run the test suite"
	@echo "make test-vm  build the VM box, boot the Vagrant cluster (QEMU/libvirt) and run tests/vm"
	@echo "make test-clientlibs  the Python client, kr8s, lightkube and kopf e2e suites against skiff"
	@echo "make test-debian-apps  nginx, redis, postgres and the Python client in images built from Debian packages, on skiff up"
	@echo "make lint  ruff + mypy + import contracts;  make proto  regenerate gRPC stubs"

# The run-time package list, for vagrant/box/build.sh (one home for it).
print-apt-run:
	@echo $(APT_RUN)

check-host:
	@[ "$$(id -u)" = 0 ] || { echo "skiff: run this as root (it installs packages and manages namespaces, mounts and cgroups)" >&2; exit 1; }
	@command -v apt-get >/dev/null && [ -r /etc/debian_version ] || { echo "skiff: this needs a Debian-like system with apt-get (Debian, Ubuntu)" >&2; exit 1; }

# apt-get update once per boot of this checkout's installs, then install.
deps: check-host
	@dpkg -s $(APT_RUN) >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_RUN); }

deps-test: deps
	@dpkg -s $(APT_TEST) >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(APT_TEST); }

deps-vm: deps-test
	@dpkg -s $(APT_VM) >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(APT_VM); }

# --no-compile: pip would compile every installed module (the Kubernetes
# client's thousands of models among them), 16 of its 34 CPU seconds on this
# machine; Python compiles what is imported, once, on first use instead.
$(STAMP): pyproject.toml
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile -e '.$(EXTRAS)'
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

# `make test` runs lint beside the tests (mypy alone takes a minute of CPU
# on a clean clone, and the tests mostly wait on daemons); each one's output
# is printed whole when it ends, and either failing fails `make test`.
# The suite runs in PYTEST_WORKERS processes (pytest-xdist; a module's tests
# stay on one worker, so its fixtures start once: tests/README.md); ports,
# networks and names are reserved machine-wide, so the root layers share the
# machine too. Bytecode is cached for the run even where the environment says
# PYTHONDONTWRITEBYTECODE: every worker and every daemon a test starts would
# otherwise compile each module again. pytest exits 5 when it collected
# nothing; that is not a failure of the suite. The report ends with the time
# per layer. The tree is compiled once before the workers start
# (tests/harness/precompile.py): on a clean clone each worker would compile
# all of it for itself.
PYTEST_WORKERS ?= 4
test: deps-test venv
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint pytest

pytest: venv
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m tests.harness.precompile
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadscope $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The client libraries' own e2e suites against skiff (tests/harness/clientlibs.py;
# a virtualenv from PyPI on first use, about half an hour).
test-clientlibs: venv
	$(PY) -m pytest -m clientlibs tests/integration/clientlibs -p no:cacheprovider $(PYTEST_ARGS)

# The Vagrant cluster for real (tests/vm, marker vm): box build (cached),
# boot, provision, join, the multi-node scenarios, destroy; each phase timed.
# Real software on skiff up (tests/e2e/agent/test_up_debian_apps.py): its
# images are built from Debian's packages with mmdebstrap and umoci, which
# takes minutes on a fresh machine (cached in /var/cache/skiff-test-images),
# so the suite has its own target, as the VM suite does.
test-debian-apps: deps-test venv
	$(PY) -m pytest -m debian_images tests/e2e/agent/test_up_debian_apps.py tests/e2e/agent/test_up_webhook.py -p no:cacheprovider $(PYTEST_ARGS)

test-vm: deps-vm venv
	$(PY) -m pytest -m vm tests/vm -p no:cacheprovider $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
