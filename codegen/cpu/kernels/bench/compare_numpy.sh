#!/bin/sh
# Interleaved tfc vs NumPy/OpenBLAS sgemm, ROUNDS processes each, median of the medians.
#   bench/compare_numpy.sh BUILD_DIR [ROUNDS]
set -e
BUILD=${1:?usage: compare_numpy.sh BUILD_DIR [ROUNDS]}
ROUNDS=${2:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d)
for r in $(seq "$ROUNDS"); do
  for t in 1 2; do
    "$BUILD/tfc-kernels-bench" --threads $t --min-time 0.3 > "$OUT/tfc.$t.$r"
    OPENBLAS_NUM_THREADS=$t python3 "$HERE/bench_numpy.py" --min-time 0.3 > "$OUT/np.$t.$r"
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import collections, statistics, sys, glob
out, rounds = sys.argv[1], int(sys.argv[2])
def parse(prefix):
    d = collections.defaultdict(list)
    for f in glob.glob(f"{out}/{prefix}.*"):
        t = f.split(".")[-2]
        for line in open(f):
            if line.startswith("#") or "threads" in line:
                continue
            cols = line.split()
            if len(cols) < 5:
                continue
            # name is everything before the threads column
            i = next(i for i, c in enumerate(cols) if c == t and i > 0)
            name = " ".join(cols[:i])
            d[(name, t)].append((float(cols[i + 2]), float(cols[-1])))
    return d
tfc, np_ = parse("tfc"), parse("np")
print(open(glob.glob(f"{out}/tfc.1.1")[0]).readline().strip())
print(open(glob.glob(f"{out}/np.1.1")[0]).readline().strip())
print("GFLOP/s: wall = flops / median wall time; cpu = flops / (median process CPU time /"
      " threads), the rate while the threads hold their cores (robust to other load)")
print(f"{'shape':36s} {'thr':>3s} {'tfc wall':>9s} {'np wall':>8s} {'ratio':>6s} "
      f"{'tfc cpu':>8s} {'np cpu':>7s} {'ratio':>6s}")
nan = float("nan")
for (name, t), v in sorted(tfc.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    a = statistics.median(x[0] for x in v)
    ac = statistics.median(x[1] for x in v)
    w = np_.get((name, t))
    b = statistics.median(x[0] for x in w) if w else nan
    bc = statistics.median(x[1] for x in w) if w else nan
    print(f"{name:36s} {t:>3s} {a:9.1f} {b:8.1f} {a / b:6.2f} {ac:8.1f} {bc:7.1f} {ac / bc:6.2f}")
PY
