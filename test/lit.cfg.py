# -*- Python -*-
# lit configuration for tfc: every .mlir and .test file under test/.
import os

import lit.formats
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
llvm_config.with_environment("PATH", config.tfc_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
