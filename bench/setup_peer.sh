#!/usr/bin/env bash
# Installs the PyTorch peer for bench/run_bench.py into a virtual environment
# (default /opt/tfc-bench; several GB: PyPI's torch wheel brings its CUDA
# libraries). Not needed for building or testing tfc.
set -euo pipefail
venv=${1:-/opt/tfc-bench}
python3 -m venv "$venv"
"$venv/bin/pip" install -q numpy torch
"$venv/bin/python" -c "import torch, numpy; print('peer ready: torch', torch.__version__, 'numpy', numpy.__version__)"
echo "run: bench/run_bench.py --bin-dir build/bin --python $venv/bin/python [--train]"
