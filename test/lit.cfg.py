# -*- Python -*-
# lit configuration for tfc: every .mlir and .test file under test/.
import os

import lit.formats
import lit.util
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TFC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tfc_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%tfc_src", config.tfc_src_root))
config.substitutions.append(("%tfc_bin", config.tfc_tools_dir))
# Variables in one CHECK block never leak into the next.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope --dump-input=fail"

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.tfc_tools_dir, config.llvm_tools_dir]
tools = [
    ToolSubst("tfc-opt", unresolved="fatal"),
    ToolSubst("tfc", unresolved="ignore"),
    ToolSubst("tfc-trace", unresolved="ignore"),
    ToolSubst("tfc-run", unresolved="ignore"),
    ToolSubst("tfc-seed-experiment", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# GoogleTest binaries built alongside the tools (only where GTest was found).
for unittest in ["tfc-frontend-tests", "tfc-artifact-tests"]:
    if os.path.exists(os.path.join(config.tfc_tools_dir, unittest)):
        config.available_features.add(unittest)
# The CUDA target (kernels as CUDA C++ through NVRTC) exists where the CUDA
# toolkit was found at build time; its tests need no GPU.
if config.tfc_cuda_target:
    config.available_features.add("cuda-target")
else:
    lit_config.note("no CUDA toolkit at build time: the CUDA codegen tests are "
                    "UNSUPPORTED (counted in the summary)")

# nvcc (CUDA's, at build time or on PATH): the kernel library's hand-written kernels are
# compiled for sm_80/sm_90/sm_90a with ptxas's register report (no spills).
import shutil as _shutil
_nvcc = _shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
if os.access(_nvcc, os.X_OK):
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", _nvcc))
else:
    lit_config.note("no nvcc: the kernel library's ptxas checks are UNSUPPORTED")

# The emulated CUDA driver (test/cuda_emulator): a fake libcuda.so.1 that runs
# tfc's kernels on the host, and its end-to-end check.
config.substitutions.append(
    ("%cuda_emulator", os.path.join(config.tfc_obj_root, "test", "cuda_emulator")))
if os.path.exists(os.path.join(config.tfc_obj_root, "test", "cuda_emulator",
                               "libcuda.so.1")) and \
        os.path.exists(os.path.join(config.tfc_tools_dir, "tfc-cuda-emulator-test")):
    config.available_features.add("cuda-emulator")
# The emulated driver's products go to its fake cuBLASLt (test/cuda_emulator/cublaslt), as a
# GPU's go to cuBLASLt; never to a real cuBLASLt this machine may have, which needs a GPU.
config.environment["TFC_CUBLASLT_LIBRARY"] = os.path.join(
    config.tfc_obj_root, "test", "cuda_emulator", "cublaslt", "libcublasLt.so.13")

# A time limit per test, so that one hung tool fails its test (and names it)
# instead of stalling the suite. lit can only kill a test's process tree with
# psutil; without it the e2e scripts' own limits (test/e2e/harness.py) and
# ctest's TIMEOUT on the whole suite (test/CMakeLists.txt) still apply.
# TFC_LIT_TEST_TIMEOUT (seconds) overrides the limit; 0 turns it off.
_test_timeout = int(os.environ.get("TFC_LIT_TEST_TIMEOUT", "1800"))
if _test_timeout and lit.util.killProcessAndChildrenIsSupported()[0]:
    lit_config.maxIndividualTestTime = _test_timeout

# ISAs of this CPU, for the tests of the hand-written kernels per ISA: a test
# that REQUIRES one the CPU lacks is reported UNSUPPORTED (counted in lit's
# summary), not silently dropped.
try:
    with open("/proc/cpuinfo") as _f:
        _flags = next((l.split(":", 1)[1].split() for l in _f if l.startswith("flags")), [])
except OSError:
    _flags = []
if {"avx2", "fma"} <= set(_flags):
    config.available_features.add("cpu-avx2")
if {"avx512f", "avx512bw", "avx512vl", "fma"} <= set(_flags):
    config.available_features.add("cpu-avx512")
for _tool in ["tfc-kernels-tests"]:
    if os.path.exists(os.path.join(config.tfc_tools_dir, _tool)):
        config.available_features.add(_tool)

# Data-parallel training over MPI (test/Tools/comm, test/e2e/data-parallel.test): needs
# Open MPI's mpirun (scripts/install-deps.sh installs it) and the communicator plugin built
# with it. CI runs as root, which mpirun refuses unless told; ranks may outnumber the cores.
import shutil as _shutil
if _shutil.which("mpirun") and os.path.exists(
        os.path.join(config.tfc_obj_root, "lib", "libtfc_comm_mpi.so")):
    config.available_features.add("mpi")
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    config.environment["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    config.substitutions.append(("%mpirun", "mpirun --oversubscribe"))
else:
    lit_config.warning("no mpirun or no libtfc_comm_mpi.so: the data-parallel (MPI) tests are "
                       "UNSUPPORTED; run scripts/install-deps.sh and rebuild")

llvm_config.with_environment("PATH", config.tfc_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
