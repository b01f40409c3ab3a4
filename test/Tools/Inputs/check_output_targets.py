"""Checks tfc's output rule (support/OutputFile.h) on every kind of target, for
every output of tfc and tfc-trace: a FIFO (standing in for /dev/null, which a
test must not risk) is written in place and stays a FIFO; a symbolic link
stays a link and its target gets the output; a directory is refused by name
with the directory untouched; a regular file is replaced whole.

usage: check_output_targets.py BIN_DIR WORK_DIR
"""
import os
import stat
import subprocess
import sys
import threading

bin_dir, work = sys.argv[1], sys.argv[2]
tfc, trace = os.path.join(bin_dir, "tfc"), os.path.join(bin_dir, "tfc-trace")
model = os.path.join(work, "m.mlir")
subprocess.run([trace, "gpt2", "--set", "n_layer=1", "-o", model], check=True)
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def outputs(target):
    """(label, command) for each output kind, writing to `target`."""
    return [
        ("tfc .so", [tfc, model, "-o", target, "--emit=so"]),
        ("tfc .mlir", [tfc, model, "-o", target, "--compile-to=kernels"]),
        ("tfc .ll", [tfc, model, "-o", target, "--emit=llvm"]),
        ("tfc --report", [tfc, model, "-o", os.path.join(work, "r.so"), "--report=" + target]),
        ("tfc-trace", [trace, "gpt2", "--set", "n_layer=1", "-o", target]),
    ]


for label, command in outputs(os.path.join(work, "fifo")):
    fifo = os.path.join(work, "fifo")
    if os.path.lexists(fifo):
        os.remove(fifo)
    os.mkfifo(fifo)
    got = bytearray()

    def drain():
        with open(fifo, "rb") as f:
            got.extend(f.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    result = subprocess.run(command, capture_output=True, timeout=300)
    if result.returncode != 0:  # unblock the reader if the tool never opened the FIFO
        with open(fifo, "wb"):
            pass
    reader.join(timeout=60)
    check(result.returncode == 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode) and len(got) > 0,
          f"{label}: a FIFO is written in place and stays a FIFO "
          f"(rc {result.returncode}, {len(got)} bytes read) {result.stderr.decode()[-300:]}")

for label, command in outputs(os.path.join(work, "link")):
    link, real = os.path.join(work, "link"), os.path.join(work, "real")
    for path in (link, real):
        if os.path.lexists(path):
            os.remove(path)
    with open(real, "w") as f:
        f.write("old")
    os.symlink("real", link)
    result = subprocess.run(command, capture_output=True, timeout=300)
    check(result.returncode == 0 and os.path.islink(link) and os.readlink(link) == "real" and
          open(real, "rb").read() != b"old" and os.path.getsize(real) > 0,
          f"{label}: a symbolic link stays, its target gets the output")

directory = os.path.join(work, "dir")
os.makedirs(directory, exist_ok=True)
with open(os.path.join(directory, "keep"), "w") as f:
    f.write("keep")
for label, command in outputs(directory):
    result = subprocess.run(command, capture_output=True, timeout=300)
    message = result.stderr.decode()
    check(result.returncode == 1 and f"cannot write '{directory}': it is a directory" in message
          and os.path.isdir(directory) and os.listdir(directory) == ["keep"],
          f"{label}: a directory is refused by name and left as it was ({message.strip()})")

for label, command in outputs(os.path.join(work, "plain")):
    plain = os.path.join(work, "plain")
    with open(plain, "w") as f:
        f.write("old")
    result = subprocess.run(command, capture_output=True, timeout=300)
    leftovers = [n for n in os.listdir(work) if n.startswith("plain.")]
    check(result.returncode == 0 and open(plain, "rb").read() != b"old" and not leftovers,
          f"{label}: a regular file is replaced whole, no temporary left ({leftovers})")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all output targets handled")
