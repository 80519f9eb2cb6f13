# The two commands of the README: `make course` and `make test`. Both set up .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The CPU build of torch 2.13.0; the kernels run in Triton's interpreter on CPU (triton pinned in pyproject).
TORCH ?= torch==2.13.0

.PHONY: course test browser clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)" -e ".[kernels,course,test]"
	touch $(STAMP)

course: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks/ $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

test: $(STAMP) browser
	$(PY) -m pytest

# Debian's Chromium and ChromeDriver for the real-browser test of the course.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  if command -v apt-get >/dev/null; then \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "no apt-get: install Chromium and ChromeDriver yourself, or the browser test is skipped"; fi

clean:
	rm -rf $(VENV)
