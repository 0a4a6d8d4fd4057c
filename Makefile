# Every target creates .venv when it is missing. torch is pinned first: an unpinned torch would
# pull a multi-GB CUDA build, while 2.13.0 is a CPU wheel that satisfies the project's range.
PY      := .venv/bin/python
PIP     := $(PY) -m pip
TORCH   := torch==2.13.0
EXTRAS  ?= dev

.PHONY: demo test test-slow bench lint venv clean

.venv/.installed-$(EXTRAS): pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e ".[$(EXTRAS)]"
	touch $@

venv: .venv/.installed-$(EXTRAS)

demo: .venv/.installed-$(EXTRAS)
	.venv/bin/archaudit demo

test: .venv/.installed-$(EXTRAS)
	$(PY) -m pytest -q

test-slow: EXTRAS = dev,hf,lmeval,ray,slurm
test-slow: .venv/.installed-$(EXTRAS)
	$(PY) -m pytest -q -m slow

bench: EXTRAS = dev,hf,lmeval
bench: .venv/.installed-$(EXTRAS)
	$(PY) benchmarks/throughput.py
	$(PY) benchmarks/mods_overhead.py
	$(PY) benchmarks/stats_speed.py
	$(PY) benchmarks/eval_speed.py

lint: .venv/.installed-$(EXTRAS)
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m ruff format --check src tests benchmarks

clean:
	rm -rf .venv build *.egg-info src/*.egg-info .pytest_cache
