"""Counts the kernels of a --target=cuda --compile-to=codegen module and those
NVRTC compiled (tfc.cuda.ptx_bytes); with a dump folder, also requires each
kernel's .cu and .ptx there."""
import os
import re
import sys

text = open(sys.argv[1]).read()
kernels = re.findall(r"func\.func private @(\w+)\([^)]*\)[^\n]*tfc\.kernel", text)
with_ptx = [k for k in kernels
            if re.search(r"@" + k + r"\([^\n]*tfc\.cuda\.ptx_bytes = [1-9]", text)]
missing = []
if len(sys.argv) > 2:
    for k in kernels:
        for ext in (".cu", ".ptx"):
            path = os.path.join(sys.argv[2], k + ext)
            if not os.path.exists(path) or not os.path.getsize(path):
                missing.append(k + ext)
print(f"{len(kernels)} kernels, {len(with_ptx)} with PTX, "
      f"{len(kernels) - len(with_ptx) + len(missing)} without")
