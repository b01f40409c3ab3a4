#!/usr/bin/env python3
"""Builds the host kernel object of the emulated CUDA driver (test/cuda_emulator) from the
CUDA C++ that `tfc --target=cuda --dump-ir=DIR` writes, one DIR/<kernel>.cu per kernel.

    build_host_kernels.py --dump-dir DIR --out kernels.so [--cxx c++]

Each dumped file is the prelude that every kernel shares (`#include "tfc/prelude.cuh"`: tfc
writes the kernel library's headers to DIR/tfc/), then the kernel's own helpers, then one
`extern "C" __global__ void NAME(T0* a, const T1* b, ...)`. The generated C++ (written next
to --out as <out>.cpp, compiled with -I DIR) includes test/e2e/cuda/host_shim.h, which makes
the CUDA built-ins plain C++, then the prelude once, then each kernel with its own helpers in
a namespace of its own (two kernels may define a helper of the same name), and per kernel:

    extern "C" const int tfc_emu_nparams_NAME = N;
    extern "C" int tfc_emu_NAME(const unsigned* grid, const unsigned* block,
                                unsigned shared, void** params, char* fault,
                                unsigned long long fault_size);

which runs the launch on host_shim.h's device model (the threads of a block cooperatively),
parameter i being the pointer that params[i] points at, and returns non-zero with the
fault's message (a shared-memory race, an access out of bounds, ...) in |fault|. The prelude's `__device__` globals (tfc_error_code) are exported
with C linkage, each with `extern "C" const unsigned long long tfc_emu_sizeof_NAME`, for
cuModuleGetGlobal. Run against it: TFC_CUDA_DRIVER=<build>/test/cuda_emulator/libcuda.so.1
TFC_CUDA_EMULATOR_KERNELS=kernels.so.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.join(HERE, "host_shim.h")

KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)')
# A parameter: its type (a pointer) and its name.
PARAM = re.compile(r"^(.*?\*)\s*(\w+)$")
# A device global at the top level of the prelude: `__device__ unsigned int tfc_error_code;`.
GLOBAL = re.compile(r"^__device__\s+([A-Za-z_][\w\s]*?)\s+(\w+)\s*;", re.M)
# A quoted include: the kernel library's headers (DIR/tfc/prelude.cuh), which hold the globals.
INCLUDE = re.compile(r'^#include\s+"([^"]+)"[^\n]*$', re.M)


class Error(Exception):
    pass


def top_level_prefix(text):
    """The longest prefix of |text| made of whole lines that ends outside every brace, so
    that a cut there never splits a function or a multi-line macro."""
    depth, cut, pos = 0, 0, 0
    for line in text.splitlines(keepends=True):
        depth += line.count("{") - line.count("}")
        pos += len(line)
        if depth == 0 and line.endswith("\n") and not line.rstrip("\n").endswith("\\"):
            cut = pos
    return text[:cut]


def expand_includes(text, dirs, seen=None):
    """|text| with each quoted include that resolves (next to the including file, then in
    |dirs|, as the compiler looks) replaced by the header's text, once per header (they
    have include guards), so that the prelude's globals can be found in it."""
    seen = set() if seen is None else seen

    def replace(m):
        for d in dirs:
            path = os.path.normpath(os.path.join(d, m.group(1)))
            if os.path.isfile(path):
                if path in seen:
                    return ""
                seen.add(path)
                with open(path) as f:
                    return expand_includes(f.read(), [os.path.dirname(path)] + dirs, seen)
        return m.group(0)  # a system header or one the compile will report missing

    return INCLUDE.sub(replace, text)


def split_kernels(sources):
    """(prelude, [(name, params, own text)]) of the dumped sources {path: text}: the prelude
    is the common top-level prefix of the text before each file's kernel."""
    heads = {}
    for path, text in sources.items():
        m = KERNEL.search(text)
        if not m:
            raise Error(f"{path}: no extern \"C\" __global__ kernel found")
        if KERNEL.search(text, m.end()):
            raise Error(f"{path}: more than one kernel; tfc writes one per file")
        heads[path] = (text[:m.start()], m)
    prelude = os.path.commonprefix([head for head, _ in heads.values()])
    prelude = top_level_prefix(prelude)
    kernels = []
    for path, (head, m) in sorted(heads.items()):
        name = m.group(1)
        params = []
        for p in (s.strip() for s in m.group(2).split(",")):
            if not p:
                continue
            pm = PARAM.match(p)
            if not pm:
                raise Error(f"{path}: kernel {name}: parameter '{p}' is not a pointer; the "
                            "emulated driver passes 8-byte pointers only")
            params.append(pm.group(1).strip())
        kernels.append((name, params, sources[path][len(prelude):]))
    names = [k[0] for k in kernels]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise Error(f"kernel names defined more than once: {', '.join(sorted(dup))}")
    return prelude, kernels


def generate(prelude, kernels, include_dirs):
    out = ["// Generated by test/cuda_emulator/build_host_kernels.py: tfc's CUDA kernels as",
           "// host C++ for the emulated CUDA driver. Do not edit.",
           f'#include "{SHIM}"', ""]
    device_globals = GLOBAL.findall(top_level_prefix(expand_includes(prelude, include_dirs)))
    # C linkage for the prelude's globals; the prelude's own definitions inherit it.
    for ctype, name in device_globals:
        out.append(f'extern "C" {ctype} {name};')
    out += ["", "// ---- The prelude, shared by every kernel. ----", prelude.rstrip(), ""]
    for ctype, name in device_globals:
        out.append(f'extern "C" const unsigned long long tfc_emu_sizeof_{name} = '
                   f"sizeof({name});")
    for name, params, text in kernels:
        args = ", ".join(f"({t})(*(void**)p[{i}])" for i, t in enumerate(params))
        out += [
            "",
            f"// ---- {name} ----",
            f"namespace tfc_emu_ns_{name} {{",
            text.strip(),
            f"}}  // namespace tfc_emu_ns_{name}",
            f'extern "C" const int tfc_emu_nparams_{name} = {len(params)};',
            f'extern "C" int tfc_emu_{name}(const unsigned* grid, const unsigned* block,',
            "                             unsigned shared, void** p, char* fault,",
            "                             unsigned long long fault_size) {",
            "  (void)p;",
            "  tfc_emu::LaunchConfig config;",
            f'  config.kernel = "{name}";',
            "  config.grid = {grid[0], grid[1], grid[2]};",
            "  config.block = {block[0], block[1], block[2]};",
            "  config.dynamic_shared = shared;",
            "  const std::string message = tfc_emu::launch(config, [&] {",
            f"    tfc_emu_ns_{name}::{name}({args});",
            "  });",
            "  if (message.empty()) return 0;",
            '  std::snprintf(fault, fault_size, "%s", message.c_str());',
            "  return 1;",
            "}",
        ]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump-dir", required=True, help="tfc's --dump-ir folder")
    ap.add_argument("--out", required=True, help="the shared object to write")
    ap.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    args = ap.parse_args()
    try:
        paths = sorted(os.path.join(root, f) for root, _, files in os.walk(args.dump_dir)
                       for f in files if f.endswith(".cu"))
        if not paths:
            raise Error(f"{args.dump_dir}: no .cu files; dump them with "
                        "tfc --target=cuda --dump-ir=DIR")
        sources = {p: open(p).read() for p in paths}
        prelude, kernels = split_kernels(sources)
        # The folders of the .cu files: their includes ("tfc/prelude.cuh") are relative to
        # them, and the generated .cpp is elsewhere.
        include_dirs = sorted({os.path.dirname(os.path.abspath(p)) for p in paths})
        cpp = args.out + ".cpp"
        with open(cpp, "w") as f:
            f.write(generate(prelude, kernels, include_dirs))
        cmd = [args.cxx, "-std=c++17", "-O1", "-ffp-contract=off", "-shared", "-fPIC"]
        cmd += [f"-I{d}" for d in include_dirs] + ["-o", args.out, cpp]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise Error(f"{' '.join(cmd)} failed:\n{r.stderr.strip()[:4000]}")
    except (Error, OSError) as e:
        print(f"build_host_kernels.py: {e}", file=sys.stderr)
        return 1
    print(f"{args.out}: {len(kernels)} kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
