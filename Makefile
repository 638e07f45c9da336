# The two commands the README promises: `make demo` (main job) and `make test` (tests).
.PHONY: setup test test-fast test-integration test-system lint generate demo bench docs clean

VENV := .venv/bin
RESULTS ?= results

setup:
	bash scripts/setup.sh

lint: setup
	$(VENV)/ruff check .
	$(VENV)/mypy

# Regenerate the explorer's generated modules from the model's state classes (after adding a
# state field or a classified field); tests/unit/test_explorer_reductions.py and
# tests/integration/test_native.py fail while they are stale.
generate: setup
	$(VENV)/python -c "from explorer.symmetry import canon_source as s; print(s(), end='')" > explorer/_generated/canon.py
	$(VENV)/python -c "from explorer.fast_replace import replace_source as s; print(s(), end='')" > explorer/_generated/replace.py

# Everything the machine can run: unit, integration and system tiers (what CI runs), in
# TEST_WORKERS pytest-xdist workers: the suite mostly waits on brokers (fences, timers), so
# one more worker than cores keeps them busy (docs/ci.md has the figures). TEST_WORKERS=0
# runs it in one process. The 30 slowest tests are listed at the end of the log, and every
# test's time (and the run folder of each broker test) is in $(RESULTS)/junit.xml.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: setup lint
	$(VENV)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=30 \
		--junitxml=$(RESULTS)/junit.xml

# The unit tier alone: model, parsers, explorer, CLI; no JVM, no daemon. Pure Python and
# CPU-bound, so one worker per core: 954 tests in 118 s on 2 cores (192 s in one process),
# 7 Dec 2026. FAST_WORKERS=0 runs it in one process.
FAST_WORKERS ?= $(shell nproc)
test-fast: setup
	$(VENV)/python -m pytest -q -n $(FAST_WORKERS) tests/unit

test-integration: setup
	$(VENV)/python -m pytest -q tests/integration

test-system: setup
	$(VENV)/python -m pytest -q tests/system

demo: setup
	$(VENV)/hwchaos explore --profile hw --out $(RESULTS)/found || true
	$(VENV)/hwchaos matrix --model-only --profiles hw,kip101,kip279,kip320,3.3.1-kraft,4.0.0,4.0.0-elr --acks 1,all --min-insync 1,2 --unclean false,true --out $(RESULTS)/matrix
	$(VENV)/hwchaos analyze $(RESULTS)/matrix

# One table of every benchmark's figures beside its target (benchmarks/table.py runs each
# benchmarks/bench_*.py). HWCHAOS_BENCH_SCALE_ROWS=200000000 adds the long Spark scale run.
bench: setup
	nice -n 10 $(VENV)/python benchmarks/table.py

# The tables of docs/model.md, regenerated from reference_model/rules.RULES.
docs: setup
	$(VENV)/python scripts/gen_docs.py

clean:
	rm -rf $(RESULTS) .pytest_cache .mypy_cache .ruff_cache
