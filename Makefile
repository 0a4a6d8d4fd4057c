# Every target creates .venv when it is missing. torch is pinned first: an unpinned torch would
# pull a multi-GB CUDA build, while 2.13.0 is a CPU wheel that satisfies the project's range.
PY     := .venv/bin/python
PIP    := $(PY) -m pip -q
TORCH  := torch==2.13.0

.PHONY: demo test test-slow bench lint typecheck clean

# One stamp per set of extras, remade when pyproject.toml changes.
.venv/.stamp-%: pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PIP) install --upgrade pip
	$(PIP) install $(TORCH)
	$(PIP) install -e ".[$(subst +,$(comma),$*)]"
	touch $@

comma := ,
BASE := .venv/.stamp-stats+report
TEST := .venv/.stamp-dev+hf+lmeval+report
FULL := .venv/.stamp-dev+hf+lmeval+report+ray+slurm+tracking
# The report's browser test opens the HTML in Debian's chromium; installed here when absent.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

demo: $(BASE)
	.venv/bin/archaudit demo

# pytest-xdist workers for `make test`: one per core, at most 4 (each holds a torch); the tests
# share nothing outside their tmp_path (tests/conftest.py). PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ "$$n" -gt 4 ] && n=4; echo $$n)

# With workers, each one's torch (and the runs it starts) uses one thread, as OMP_NUM_THREADS=1:
# tests/report on two workers took 209 s / 126 CPU-s with two threads each, 106 s / 116 CPU-s
# with one, at the same load (docs/testing.md).
WORKER_THREADS := $(if $(filter 0 1,$(PYTEST_WORKERS)),,OMP_NUM_THREADS=1)

test: $(TEST)
	$(WORKER_THREADS) $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal

test-slow: $(FULL)
	command -v chromium >/dev/null || \
		($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium)
	$(PY) -m pytest -q -m slow

bench: $(FULL)
	$(PY) benchmarks/throughput.py
	$(PY) benchmarks/mods_overhead.py
	$(PY) benchmarks/stats_speed.py
	$(PY) benchmarks/predict_cache.py
	$(PY) benchmarks/eval_speed.py
	$(PY) benchmarks/report_speed.py
	$(PY) benchmarks/prepare_speed.py
	$(PY) benchmarks/sequential_design.py
	$(PY) benchmarks/noise_panel.py
	$(PY) benchmarks/coordinator_idle.py
	$(PY) benchmarks/diagnose_speed.py
	$(PY) benchmarks/gpu_mfu.py

lint: $(TEST)
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m ruff format --check src tests benchmarks
	$(MAKE) typecheck

# mypy on src/archaudit, configured in pyproject.toml ([tool.mypy]); about a minute.
typecheck: $(TEST)
	$(PY) -m mypy

clean:
	rm -rf .venv build src/*.egg-info .pytest_cache .ruff_cache .mypy_cache
