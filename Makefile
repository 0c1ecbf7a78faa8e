# Set-up and test entry points. `make install` builds .venv from scratch; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Offline: no Hugging Face retries (minutes per test otherwise).
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install test bench clean

install: $(BIN)/.installed

$(BIN)/.installed: requirements.txt requirements-allennlp.txt requirements-dev.txt setup.cfg
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -r requirements.txt
	$(BIN)/pip install --no-deps -r requirements-allennlp.txt
	$(BIN)/pip install -r requirements-dev.txt
	$(BIN)/pip install --no-deps --no-build-isolation -e .
	touch $@

test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q tests

bench: install
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV)
