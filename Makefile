# FaultSense task runner: the gates CI runs (.ci/run) and the test tiers, from the repo root.
#
#   make lint        ruff check, ruff format --check, the import-layer contract test
#   make type        mypy over the installed namespace (scripts/typecheck.py; 1-3 min)
#   make check       lint + type + test (what .ci/run gates on before the slow tier)
#   make test-fast   the pure algorithms: not integration, not scale, a quarter of the examples
#   make test        the default tier (README: everything but @pytest.mark.slow)
#   make test-slow   the slow tier (real vLLM server on CPU, headless Chromium; see README)
#   make test-exploratory  measurements on the host, not in CI (an outside cgroup throttle; ~30 min)
#   make fuzz        the property tests with fresh Hypothesis seeds, FUZZ_RUNS times
#   make bench       the CPU benchmarks of bench/ (minutes each; they rewrite bench/results/)
#
# Set-up: python3 -m venv .venv && .venv/bin/pip install -e '.[test,dev]' (the README's, plus the
# dev extra that pins ruff and mypy). Tools come from the venv; override with PY=... RUFF=...

PY ?= .venv/bin/python
RUFF ?= .venv/bin/ruff
PYTEST = $(PY) -m pytest

# property tests: every @given test (Hypothesis marks them `hypothesis`)
FUZZ_RUNS ?= 3
FUZZ_SELECT ?= -m "hypothesis and not slow and not search and not exploratory"
FUZZ_PATHS ?= tests

# `python -m bench.<name>` for each; the README lists what each measures. Not here:
# bench_vllm_cpu_probe (needs .venv-vllm: `make bench-vllm`) and bench_gpu_check (needs CUDA: `make bench-gpu`).
BENCHES ?= bench_cover bench_paper_sim bench_recheck_bound bench_anchor_noise bench_accuracy bench_noise_free bench_probe_memory bench_local_probe bench_local_sweep bench_minder bench_flowpulse bench_sequential bench_metrics

.PHONY: help lint type check test-fast test test-slow test-exploratory fuzz bench bench-vllm bench-gpu

help:
	@sed -n '3,12p' Makefile

lint:
	$(RUFF) check .
	$(RUFF) format --check .
	$(PYTEST) -q -p no:cacheprovider tests/test_import_contract.py

type:
	$(PY) scripts/typecheck.py

check: lint type test

test-fast:
	HYPOTHESIS_PROFILE=quick $(PYTEST) -m "not slow and not integration and not scale and not search and not exploratory"

test:
	$(PYTEST)

test-slow:
	$(PYTEST) -m slow

test-exploratory:
	$(PYTEST) -m exploratory

fuzz:
	@for i in $$(seq 1 $(FUZZ_RUNS)); do \
		echo "== fuzz run $$i of $(FUZZ_RUNS) (HYPOTHESIS_PROFILE=fuzz: fresh seeds, more examples)"; \
		HYPOTHESIS_PROFILE=fuzz $(PYTEST) $(FUZZ_SELECT) $(FUZZ_PATHS) || exit 1; \
	done

bench:
	@for b in $(BENCHES); do echo "== bench.$$b"; $(PY) -m bench.$$b || exit 1; done

bench-vllm:
	$(PY) -m bench.bench_vllm_cpu_probe

bench-gpu:
	scripts/gpu-check.sh
