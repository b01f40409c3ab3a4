"""Counts the kernels of a --target=cuda --compile-to=codegen module and those
NVRTC compiled (an .entry of the module's PTX, tfc.device_portable, listed in
tfc.device_kernels) and those whose registers ptxas spills to local memory
(tfc.cuda.spill_bytes); with a dump folder, also requires each kernel's .cu
and .ptx there."""
import os
import re
import sys

text = open(sys.argv[1]).read()
kernels = re.findall(r"func\.func private @(\w+)\([^)]*\)[^\n]*tfc\.kernel", text)
ptx = re.search(r'tfc\.device_portable = "([^"]*)"', text)
listed = re.search(r"tfc\.device_kernels = \[([^\]]*)\]", text)
listed = set(re.findall(r'"(\w+)"', listed.group(1))) if listed else set()
entries = set(re.findall(r"\.entry (\w+)\(", ptx.group(1))) if ptx else set()
with_ptx = [k for k in kernels if k in entries and k in listed]
missing = []
if len(sys.argv) > 2:
    for k in kernels:
        for ext in (".cu", ".ptx"):
            path = os.path.join(sys.argv[2], k + ext)
            if not os.path.exists(path) or not os.path.getsize(path):
                missing.append(k + ext)
spills = re.findall(r"@(\w+)\([^\n]*tfc\.cuda\.spill_bytes = (\d+)", text)
print(f"{len(kernels)} kernels, {len(with_ptx)} with PTX, "
      f"{len(kernels) - len(with_ptx) + len(missing)} without")
print(f"{len(spills)} spill registers" +
      "".join(f"\n  {k}: {b} bytes of spill stores and loads" for k, b in spills))
