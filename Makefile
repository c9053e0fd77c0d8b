# Every target builds its own virtualenv on first use: a fresh machine needs only python3.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: all verify test test-dev test-wheel lint docs prove bench bench-real bench-queries fuzz clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,dev,plots,otel,sql,queries,docs]'
	touch $(STAMP)

## The main job: prove the example contract set consistent with z3 (offline, no API key).
verify: $(STAMP)
	$(VENV)/bin/hoare verify examples/

## The whole test suite (offline), once, on the built wheel installed (not editable) in
## .venv-wheel: what ships. Parallel over the cores, then the tests marked serial.
test: $(STAMP)
	$(PY) tests/against_wheel.py

## The same suite on the editable install (no wheel build): the fast loop while developing.
test-dev: $(STAMP)
	$(PY) tests/against_wheel.py --editable

test-wheel: test

## Differential fuzzer of hoare verify and the pre-flight against real Python and pydantic
## (tests/fuzz/README.md): HOARE_FUZZ_CASES (default 20000), HOARE_FUZZ_SEED (default random).
fuzz: $(STAMP)
	cd tests && ../$(PY) -m fuzz

## ruff on everything; mypy --strict on kernel/ and src/hoare: no error anywhere
## (tests/mypy_gate.py against tests/mypy_baseline.txt, which is empty).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy --strict kernel/
	$(PY) tests/mypy_gate.py

## The documentation site (docs/, mkdocs.yml) into build/site; any warning fails it.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

## Machine-check the Lean 4 model of the kernel (needs elan/lake; never faked).
prove:
	@command -v lake >/dev/null 2>&1 || { \
	  echo "make prove: 'lake' was not found on PATH, so the Lean proofs were NOT checked."; \
	  echo "Install the Lean toolchain manager elan (https://github.com/leanprover/elan):"; \
	  echo "  curl -sSfL https://raw.githubusercontent.com/leanprover/elan/master/elan-init.sh | sh -s -- -y --default-toolchain none"; \
	  echo "then add ~/.elan/bin to PATH and run 'make prove' again (lean/lean-toolchain pins the release)."; \
	  exit 127; }
	@if grep -rnE '(^|[^A-Za-z_])(sorry|admit)([^A-Za-z_]|$$)|^[[:space:]]*axiom[[:space:]]' --include='*.lean' lean; then \
	  echo "make prove: lean/ contains sorry, admit or an axiom declaration (listed above)."; exit 1; fi
	cd lean && lake build

## Benchmarks: every figure is a ratio measured in one run (see bench/README.md).
bench: $(STAMP)
	$(PY) bench/run.py

## A real small model on llama.cpp's server (builds it once: 10-15 min; skips if it cannot).
bench-real: $(STAMP)
	$(PY) bench/real_model/run.py

## Does examples="auto" help a small model? (hoare.queries on the same server)
bench-queries: $(STAMP)
	$(PY) bench/real_model/queries.py

clean:
	rm -rf $(VENV) .venv-wheel build *.egg-info src/*.egg-info
