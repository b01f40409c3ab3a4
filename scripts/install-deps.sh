#!/usr/bin/env bash
# Installs everything tfc needs to build and test, from Debian's packages (and PyPI for the
# Python reference used by the end-to-end tests). Idempotent: a second run does nothing
# beyond checking.
set -euo pipefail

need_apt=()
pkgs=(llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools libfmt-dev
      libgtest-dev googletest ninja-build ccache cmake g++ python3 python3-pip
      clang libclang-rt-14-dev  # clang + compiler-rt: the runtime's libFuzzer targets
      libpng-dev    # tfc-run's --plot PNG
      python3-dev   # Python.h for the bindings (python/)
      openmpi-bin libopenmpi-dev  # mpirun + MPI headers: data-parallel training (libtfc_comm_mpi.so)
      libcpp-httplib-dev nlohmann-json3-dev)  # tfc-run serve: HTTP/1.1 and JSON
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$p")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "tfc: installing Debian packages: ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# Python for the tests: NumPy (the reference of the end-to-end numerics) with ml_dtypes
# (its bfloat16), psutil (lit needs it to enforce its per-test time limit,
# test/lit.cfg.py), the Python bindings' build (scikit-build-core, pybind11) and tests
# (pytest); PyTorch and transformers, the reference of the Hugging Face model tests
# (test/e2e/hf; about 3 GB, a minute or two), safetensors, which writes the checkpoints
# of test/Tools/tfc-run/hf-weights.test, and Hugging Face's tokenizers, the reference of
# test/Tools/tfc-run/hf-tokenizer.test.
PY=${PYTHON:-python3}
for mod in numpy ml_dtypes psutil pytest pybind11 scikit_build_core torch transformers \
           safetensors tokenizers openai; do
  if ! "$PY" -c "import $mod" 2>/dev/null; then
    echo "tfc: installing $mod for $PY"
    "$PY" -m pip install -q "$mod" 2>/dev/null || "$PY" -m pip install -q --break-system-packages "$mod"
  fi
done
echo "tfc: dependencies ready"
