"""The set-up without make (README) must build llama-cpp-python exactly as `make setup` does.

The Makefile's LLAMA_CMAKE_ARGS and the README's `export CMAKE_ARGS=...` are two copies of one list
(portable CPU flags + build only what verdictlab loads); a flag added to one and not the other would
bring back the "Illegal instruction" crash or the slow build on one path.  This test keeps them equal.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _makefile_args() -> list[str]:
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    m = re.search(r"^LLAMA_CMAKE_ARGS \?=(.*)$", text, flags=re.M)
    assert m, "Makefile has no LLAMA_CMAKE_ARGS ?= line"
    return shlex.split(m.group(1).replace("$(CURDIR)", "<root>"))


def _readme_args() -> list[str]:
    text = (ROOT / "README.md").read_text()
    m = re.search(r'^export CMAKE_ARGS="(.*?)"$', text, flags=re.M | re.S)
    assert m, "README has no export CMAKE_ARGS=\"...\" line"
    return shlex.split(m.group(1).replace("\\\n", " ").replace("$PWD", "<root>"))


def test_readme_cmake_args_equal_the_makefile_ones() -> None:
    assert _readme_args() == _makefile_args()


def test_build_flags_are_portable_and_minimal() -> None:
    args = set(_makefile_args())
    # portable: no -march=native, no AMX / AVX-512 (AMX-advertising CPUs crash on a native build)
    assert {"-DGGML_NATIVE=OFF", "-DGGML_AVX512=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF",
            "-DGGML_AMX_BF16=OFF"} <= args
    # minimal: no multimodal library, and llama.cpp's own "common" library skipped by the include file
    assert "-DLLAVA_BUILD=OFF" in args
    include = [a for a in args if a.startswith("-DCMAKE_PROJECT_llama.cpp_INCLUDE=")]
    assert include == ["-DCMAKE_PROJECT_llama.cpp_INCLUDE=<root>/cmake/llama-cpp-no-common.cmake"]
    cmake_file = ROOT / "cmake" / "llama-cpp-no-common.cmake"
    code = [ln for ln in cmake_file.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert code == ["set(LLAMA_BUILD_COMMON OFF)"]
