# The two commands that matter: `make run` and `make test`. Both build .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PORT ?= 4318
UI_PORT ?= 8501
GRPC_PORT ?= 4317
RUNS ?= 1000
DAYS ?= 14
DEMO ?= auto
# pytest-xdist workers for `make test`; a test file's tests stay together in one worker (module fixtures)
TEST_WORKERS ?= 2

.PHONY: run test bench lint venv browser clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

# Debian's chromium and its matching chromedriver for the dashboards' real-browser smoke test
# (selenium drives it; nothing is downloaded by the test itself).
browser:
	@{ command -v chromium && command -v chromedriver; } >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	      || echo "warning: could not install chromium; the browser smoke test will fail"; \
	  else echo "warning: apt-get missing; install chromium by hand for the browser smoke test"; fi; }

lint: $(STAMP)
	$(BIN)/ruff check .

test: $(STAMP) browser
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

bench: $(STAMP)
	$(BIN)/python -m bench

run: $(STAMP)
	$(BIN)/python -m steplens.stack --port $(PORT) --ui-port $(UI_PORT) --grpc-port $(GRPC_PORT) --runs $(RUNS) --days $(DAYS) --demo $(DEMO) \
	  $(if $(CONFIG),--config $(CONFIG))

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
