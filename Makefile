# The two commands of the README: `make course` and `make test`. Both set up .venv first, on CPU.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# PyTorch's index of CPU-only builds: torch without CUDA's libraries or triton. Where it cannot be reached,
# pip's own index and configuration are used; constraints-cpu.txt then refuses a CUDA build of torch (which
# requires another triton) before anything is downloaded.
CPU_INDEX := https://download.pytorch.org/whl/cpu
PIP := $(PY) -m pip install -q -c constraints-cpu.txt

.PHONY: course test clean

$(STAMP): pyproject.toml constraints-cpu.txt
	@$(PYTHON) -c "import sys; sys.exit(sys.version_info < (3, 10))" || { echo "$(PYTHON) is Python" \
	  "$$($(PYTHON) -c 'import platform; print(platform.python_version())'): gpusim needs 3.10 or later: make" \
	  "PYTHON=python3.11 (or any of 3.10-3.14)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	@if [ "$$(uname -s)" = Linux ] && ! $(PY) -c "import sys; sys.exit(sys.version_info >= (3, 15))"; then \
	  echo "Python $$($(PY) -c 'import platform; print(platform.python_version())'): torch 2.13 and triton 3.6.0" \
	    "publish Linux wheels for Python 3.10 to 3.14 only: make clean, then make PYTHON=python3.14 (or 3.10-3.13)"; \
	  exit 1; fi
	$(PY) -m pip install -q --upgrade pip
	@extras=kernels,course,test; \
	if [ "$$(uname -s)" != Linux ]; then \
	  echo "torch: not installed on $$(uname -s): the kernels need Linux (Triton); the model and the course do not"; \
	elif $(PY) -c "import urllib.request as u; u.urlopen('$(CPU_INDEX)/torch/', timeout=5)" 2>/dev/null; then \
	  echo "torch: the CPU build from $(CPU_INDEX)"; $(PIP) --index-url $(CPU_INDEX) torch || exit 1; \
	else \
	  echo "torch: $(CPU_INDEX) unreachable; pip's configured index instead"; $(PIP) torch 2>/dev/null || { \
	  extras=course,test; echo "torch: no CPU build there (PyPI's torch wants another triton than the interpreter's):" \
	    "the model and the course install without the kernels, whose tests and cells say so; the README's CUDA" \
	    "command installs them on a GPU machine"; }; \
	fi; \
	$(PIP) -e ".[$$extras]"
	touch $(STAMP)

course: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks/ $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# The real-browser test runs where Chromium and ChromeDriver are installed, and says so when skipped. The tests
# run in one process per core (pytest-xdist), handed out one at a time as a process finishes its last, but for the
# groups (xdist_group: tests/test_results.py with the other tests that score the held-out sets, the browser tests,
# the headless notebooks and puzzle sections, the puzzles' checks, the two-process twin, each kernel case's tests),
# each run whole by one process, the largest first (pytest below 9.2: pyproject.toml says why). The suite's Python
# processes (its two, the notebooks' kernels, the checkers, the subprocesses) write bytecode and pytest's rewritten
# tests, even where PYTHONDONTWRITEBYTECODE is set, so that each one after the first reads them compiled.
test: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -n auto --dist loadgroup

clean:
	rm -rf $(VENV)
