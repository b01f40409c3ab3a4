#!/usr/bin/env bash
# Installs the PyTorch, JAX and llama.cpp peers for bench/run_bench.py into a virtual environment
# (default /opt/tfc-bench; several GB: PyPI's torch wheel brings its CUDA
# libraries). Not needed for building or testing tfc.
set -euo pipefail
venv=${1:-/opt/tfc-bench}
python3 -m venv "$venv"
"$venv/bin/pip" install -q numpy torch jax gguf
# llama.cpp from its sources (GGML compiled for this CPU, as the issue asks), ~10 min here.
"$venv/bin/pip" install -q --no-binary llama-cpp-python llama-cpp-python
# llama.cpp's own HTTP server (slots, continuous batching), the peer of bench/serve_bench.py,
# built from the same llama.cpp sources the package vendors (~15 min here).
version=$("$venv/bin/python" -c "import llama_cpp; print(llama_cpp.__version__)")
mkdir -p "$venv/src"
"$venv/bin/pip" download -q --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$venv/src"
tar xzf "$venv/src/llama_cpp_python-$version.tar.gz" -C "$venv/src"
llama="$venv/src/llama_cpp_python-$version/vendor/llama.cpp"
cmake -S "$llama" -B "$llama/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_SERVER=ON \
      -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF \
      -DGGML_NATIVE=ON >/dev/null
cmake --build "$llama/build" --target llama-server >/dev/null
ln -sf "$llama/build/bin/llama-server" "$venv/bin/llama-server"
"$venv/bin/python" -c "import torch, numpy; print('peer ready: torch', torch.__version__, 'numpy', numpy.__version__)"
"$venv/bin/python" -c "import jax; print('peer ready: jax', jax.__version__)"
"$venv/bin/python" -c "import llama_cpp; print('peer ready: llama.cpp', llama_cpp.__version__)"
echo "peer ready: llama-server $venv/bin/llama-server"
echo "run: bench/serve_bench.py --bin-dir build/bin --llama-server $venv/bin/llama-server --python $venv/bin/python"
echo "run: bench/run_bench.py --bin-dir build/bin --python $venv/bin/python [--train] [--compile] [--jax $venv/bin/python] [--llamacpp $venv/bin/python]"
