# kbharness: `make demo` evaluates a problem end to end; `make test` runs the test suite.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
# Candidates run in a bubblewrap sandbox (Debian package bubblewrap), installed here when missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install demo test test-all gpu-check

# torch==2.13.0 is a CPU build here; a machine that already has torch (a GPU box) keeps its own.
install:
	$(PYTHON) -c "import torch" 2>/dev/null || $(PIP) install -q torch==2.13.0
	command -v bwrap >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends bubblewrap; } \
		|| echo "bubblewrap could not be installed: kb will refuse to run candidates unsandboxed unless given --no-sandbox"
	$(PIP) install -q -e '.[test]'

demo: install
	kb run 2/71 --size batch_size=16

test: install
	$(PYTHON) -m pytest -q

gpu-check:
	bash scripts/gpu_check.sh
