# rrfbench: `make demo` runs the main job, `make test` passes the tests. Both bootstrap .venv.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Datasets: ../shared/datasets when it exists (read-only; caches never go there).
SHARED_DATA := $(abspath ../shared/datasets)
ifeq ($(wildcard $(SHARED_DATA)),)
else
export RRFBENCH_DATA ?= $(SHARED_DATA)
endif
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PYTHONUNBUFFERED := 1
PIP := $(BIN)/python -m pip install -q --disable-pip-version-check -c constraints.txt

.PHONY: demo test lab notebooks browser-test bench regress lint mutate constraints clean advice

$(VENV)/.base:
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	touch $@

# uv when it can, else pip, the same pinned versions (rrfbench/_bootstrap.py: 22.5 s against pip's
# 88.3 s, benchmarks/bench_install.py). Neither compiles byte-code here (pip would compile all
# ~18,000 .py files one by one: 1.8 of a fresh install's 3.7 minutes on 2 cores); .bytecode
# below writes it for what processes import.
$(VENV)/.dense-dev: pyproject.toml constraints.txt $(VENV)/.base
	$(BIN)/python rrfbench/_bootstrap.py -e ".[dense,dev,engines]"
	touch $@

# An editable install compiles nothing. Byte-code (which Python reads even where
# PYTHONDONTWRITEBYTECODE=1 keeps it from writing any, as on this machine) and numba's cache of
# the sweep kernels are built here once, and again only for sources that changed: otherwise
# every fresh process (each CLI call, test worker, notebook kernel) compiles the package and
# the libraries it imports again (`import rrfbench.cli` 4.4 s instead of 1.3 s), and each of
# the first sweeps ~14 s of kernels. rrfbench._bytecode imports the libraries those processes
# import, in two processes, with byte-code writing on (env -u: the variable, not the module,
# decides for the package's own import that `python -m` does first): 15 s on 2 cores, where
# compiling all of site-packages first took 48; redone only when the libraries are.
$(VENV)/.bytecode: $(VENV)/.dense-dev
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m rrfbench._bytecode
	touch $@

SOURCES := $(wildcard rrfbench/*.py rrfbench/*/*.py rrfbench/*/*/*.py)
$(VENV)/.compiled: $(VENV)/.bytecode $(SOURCES)
	$(BIN)/python -m compileall -q rrfbench
	$(BIN)/python -m rrfbench.fusion.kernels
	$(BIN)/python -m rrfbench.core.exact_products
	touch $@

$(VENV)/.notebooks: $(VENV)/.dense-dev
	$(BIN)/python rrfbench/_bootstrap.py -e ".[dense,dev,notebooks]"
	touch $@

## demo: retrieve bm25, fts5, dense on scifact; sweep on train, report on test; presets; report.md
demo: $(VENV)/.compiled
	$(BIN)/rrfbench demo scifact

## test: the whole suite (CI runs this)
test: $(VENV)/.compiled
	$(BIN)/python -m pytest -q -n 2 --dist worksteal

## lab: open the notebooks in JupyterLab (also as root, e.g. in a container)
lab: $(VENV)/.notebooks
	$(BIN)/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root,)

## notebooks: execute every notebook against the committed results; save it with its outputs
notebooks: $(VENV)/.compiled
	$(BIN)/python -m tests.nbrun --write

## bench: speed benchmarks (ratios against named baselines, same process)
bench: $(VENV)/.compiled
	$(BIN)/python benchmarks/bench_bm25.py
	$(BIN)/python benchmarks/bench_fts5.py
	$(BIN)/python benchmarks/bench_sweep.py
	$(BIN)/python benchmarks/bench_suite.py
	$(BIN)/python benchmarks/bench_presets.py
	$(BIN)/python benchmarks/bench_engine_models.py
	$(BIN)/python benchmarks/bench_jieba.py
	$(BIN)/python benchmarks/bench_dense.py
	$(BIN)/python benchmarks/bench_topk.py
	$(BIN)/python benchmarks/bench_fts5_long.py

## regress: metric-regression check against results/baselines.json
regress: $(VENV)/.compiled
	$(BIN)/rrfbench regress

lint: $(VENV)/.dense-dev
	$(BIN)/ruff check rrfbench tests benchmarks

## browser-test: notebooks 06 (explorer) and 09 (judging widget) in JupyterLab driven by Playwright in Debian's chromium (not in `make test`)
browser-test: $(VENV)/.notebooks
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	$(PIP) "playwright>=1.40"
	$(BIN)/python tests/browser/browser_check.py

## mutate: mutation testing (mutmut) of fusion, runs, tuning, stats and the presets
mutate: $(VENV)/.dense-dev
	$(PIP) "mutmut>=3.3"
	rm -rf mutants
	$(BIN)/mutmut run --max-children 2 || true
	$(BIN)/mutmut results --all true > results/mutation.txt || true
	$(BIN)/python benchmarks/mutation_score.py results/mutation.txt

constraints: $(VENV)/.dense-dev
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^rrfbench' > constraints.txt.new
	mv constraints.txt.new constraints.txt

clean:
	rm -rf results/runs results/index results/cache

## advice: the suite's advice shipped with the package (rrfbench/results/advice/), from the committed results
advice: $(VENV)/.compiled
	$(BIN)/python -m rrfbench.results.shipped en
