# Included by llama.cpp's own project() call when llama-cpp-python is built with
#   -DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>
# (see LLAMA_CMAKE_ARGS in the Makefile and the README's set-up without make).
#
# llama-cpp-python forces LLAMA_BUILD_COMMON=ON in its cache, but its Python bindings load only
# libllama and libggml*: the "common" library (argument parsing, chat-template and download helpers
# for llama.cpp's own command-line tools, plus cpp-httplib) is compiled and installed unused, and was
# ~40% of the compile time. A normal variable in llama.cpp's directory scope shadows the cached value
# (policy CMP0077), so llama.cpp skips common/ and cpp-httplib and does not install them.
set(LLAMA_BUILD_COMMON OFF)
