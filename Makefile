# Set-up and test entry points. `make install` builds .venv from scratch; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Offline: no Hugging Face retries (minutes per test otherwise).
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export NO_MKDOCS_2_WARNING := 1
# The data the configs, tests and benchmarks read: the bundled data beside a checkout, unless set
# (the package itself knows no data folder; see docs/configs.md).
ELMO_PLUGIN_DATA ?= $(abspath ../shared/data)
export ELMO_PLUGIN_DATA

.PHONY: install test docs wheels bench gpu-check clean

install: $(BIN)/.installed $(VENV)/nltk_data/tokenizers/punkt

$(BIN)/.installed: requirements.txt requirements-allennlp.txt requirements-dev.txt pyproject.toml packaging/elmo-bilm/pyproject.toml packaging/elmo-bilm/setup.py elmo_bilm/model/fused_cell.c packaging/elmo-bilm-wikipedia-1024/pyproject.toml packaging/elmo-bilm-wikipedia-1024-256/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -r requirements.txt
	$(BIN)/pip install --no-deps -r requirements-allennlp.txt
	$(BIN)/pip install -r requirements-dev.txt
	$(BIN)/pip install --no-deps --no-build-isolation -e packaging/elmo-bilm -e packaging/elmo-bilm-wikipedia-1024 \
		-e packaging/elmo-bilm-wikipedia-1024-256 -e .
	touch $@

# Every `allennlp` start imports all of allennlp_models, whose NarrativeQA metric downloads punkt
# and wordnet when nltk finds no `tokenizers/punkt`: two DNS lookups and an error per start, with
# no network. nltk >= 3.9 never reads `punkt` (its tokenizers load `punkt_tab`), so an empty folder
# of that name in the venv's nltk_data stops the download without standing in for anything used.
$(VENV)/nltk_data/tokenizers/punkt: $(BIN)/.installed
	mkdir -p $@

# The CPU kernels of a machine without AVX-512 (AMD EPYC Zen 2/3): ATen's vectorised ops and oneDNN's
# convolutions change rounding under these (checked: tests/numerics.py); MKL ignores its variable on
# AMD CPUs (the same SGEMM bits either way) but honours it on Intel ones.
AVX2 := ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2
# The tests marked emulated_cpu (precisions, AllenNLP's Elmo, bilm-tf's activations, the LSTM's and
# char CNN's routes) on an emulated AVX2-only AMD EPYC (Zen 3: no AVX-512, no VNNI), by Debian's
# qemu-user (.ci/run installs it): the CPU's own feature bits choose every library's kernels there,
# also where no variable above reaches (fbgemm's int8 products and their 7-bit inputs, MKL on AMD),
# with those instructions' exact arithmetic. Emulation is slow, so only those files
# (docs/reliability.md); child processes run natively, and so would pytest-xdist's workers (hence
# one process).
EMULATED_AVX2 := qemu-x86_64 -cpu EPYC-Milan-v1,check=off

# The suite in two processes of one thread each (pytest-xdist; a file's tests stay in one process,
# so its module fixtures, such as the local Ray, start once): most of its time is single-threaded
# (subprocess start-ups, small models), so two processes use two cores where one did not.
# Every pass runs even when an earlier one fails (stopping at the first hid the others'
# failures): `$(call test_pass,NAME,COMMAND)` prints and runs COMMAND and adds NAME to `failed`
# if it fails; the last line names the failed passes, and then `make test` fails. (The docs pass
# is `docs`'s command, not `$(MAKE) docs`: a recipe naming $(MAKE) runs even under `make -n`.)
MKDOCS_BUILD = $(BIN)/mkdocs build --strict --quiet
test_pass = echo '$(2)'; $(2) || failed="$$failed $(1)";
test: install
	@failed=; \
	$(call test_pass,ruff-check,$(BIN)/ruff check .) \
	$(call test_pass,ruff-format,$(BIN)/ruff format --check .) \
	$(call test_pass,mypy,$(BIN)/mypy elmo_bilm elmo_plugin) \
	$(call test_pass,pytest,OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n 2 --dist loadfile tests) \
	$(call test_pass,pytest-avx2,$(AVX2) $(BIN)/python -m pytest -q -m "numerics and not same_on_every_cpu" tests) \
	if command -v qemu-x86_64 >/dev/null; then \
	$(call test_pass,pytest-emulated-avx2,OMP_NUM_THREADS=1 $(EMULATED_AVX2) $(BIN)/python -m pytest -q -m "emulated_cpu and not same_on_every_cpu" tests) \
	else echo "pytest-emulated-avx2: skipped: no qemu-x86_64 (Debian's qemu-user)"; fi; \
	$(call test_pass,docs,$(MKDOCS_BUILD)) \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed"; exit 1; fi; \
	echo "make test: every pass passed"

# The documentation site (MkDocs + Material + mkdocstrings) into site/; --strict: a broken link,
# anchor or reference fails the build.
docs: install
	$(MKDOCS_BUILD)

# The four distributions as wheels in dist/: elmo-bilm (the torch-only core with the shipped biLM,
# packaging/elmo-bilm), elmo-bilm-wikipedia-1024 and elmo-bilm-wikipedia-1024-256 (the larger
# biLMs, by name `wikipedia_1024` and `wikipedia_1024_256`) and elmo_plugin (depends on the core).
wheels: install
	$(BIN)/pip wheel --no-deps --no-build-isolation -w dist packaging/elmo-bilm packaging/elmo-bilm-wikipedia-1024 \
		packaging/elmo-bilm-wikipedia-1024-256 .

bench: install
	$(BIN)/python -m elmo_benchmarks.run_all

# On a GPU machine: CUDA vs CPU and the references, then the GPU benchmark table (make test runs
# the same checks with --device cpu).
gpu-check: install
	$(BIN)/python -m elmo_benchmarks.tools.gpu_check --device cuda --bench

clean:
	rm -rf $(VENV)
