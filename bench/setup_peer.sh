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
"$venv/bin/python" -c "import torch, numpy; print('peer ready: torch', torch.__version__, 'numpy', numpy.__version__)"
"$venv/bin/python" -c "import jax; print('peer ready: jax', jax.__version__)"
"$venv/bin/python" -c "import llama_cpp; print('peer ready: llama.cpp', llama_cpp.__version__)"
echo "run: bench/run_bench.py --bin-dir build/bin --python $venv/bin/python [--train] [--compile] [--jax $venv/bin/python] [--llamacpp $venv/bin/python]"
