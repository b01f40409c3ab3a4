"""Checks `tfc-run MODEL.so profile ENTRY --json` against what the compiler said
of the same entry in `tfc --report` (independently: the report sums the cost
model over the planned entry, the profile reads the artifact's per-launch
table), and the arithmetic of the floors and regimes.

usage: check_profile.py PROFILE.json REPORT.json ENTRY PEAK_GFLOPS BANDWIDTH_GBS
"""
import json
import math
import sys

profile_path, report_path, entry, peak_gflops, bandwidth_gbs = sys.argv[1:6]
profile = json.load(open(profile_path))
report = json.load(open(report_path))["entries"][entry]
peak, bandwidth = float(peak_gflops) * 1e9, float(bandwidth_gbs) * 1e9
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


kernels = profile["kernels"]
launches = sum(k["launches"] for k in kernels)
flops = sum(k["flops"] for k in kernels)
nbytes = sum(k["bytes"] for k in kernels)
check(launches == report["kernels"], f"launches {launches} != report kernels {report['kernels']}")
check(flops == report["flops"], f"FLOPs {flops} != report flops {report['flops']}")
check(nbytes == report["bytes_moved"], f"bytes {nbytes} != report bytes_moved {report['bytes_moved']}")
check(profile["machine"]["flops_per_second"] == peak, "the given peak is not the one used")
check(profile["machine"]["bytes_per_second"] == bandwidth, "the given bandwidth is not the one used")
check(profile["calls"] >= 1, "no timed call")
seconds = [k["seconds"] for k in kernels]
check(all(s >= 0 and math.isfinite(s) for s in seconds), "a kernel time is negative or not finite")
check(sum(seconds) > 0, "no kernel took any time")
# Kernel times are a part of the calls' time (the timers sit inside the calls), on average
# over the same calls; a little slack for the clocks' granularity.
mean_call = profile["call_seconds_mean"]
check(sum(seconds) <= mean_call * 1.01 + 1e-5,
      f"kernels {sum(seconds):.6f} s exceed the mean call's {mean_call:.6f} s")
check(profile["call_seconds_median"] > 0, "no call time")
names = [k["name"] for k in kernels]
check(len(set(names)) == len(names), "a kernel is listed twice")
for k in kernels:
    # The floor of one launch is max(FLOPs / peak, bytes / bandwidth); a kernel's is the
    # sum over its launches, so it lies between the max of the sums and their sum.
    low = max(k["flops"] / peak, k["bytes"] / bandwidth)
    high = k["flops"] / peak + k["bytes"] / bandwidth
    check(low * (1 - 1e-9) <= k["floor_seconds"] <= high * (1 + 1e-9),
          f"{k['name']}: floor {k['floor_seconds']} outside [{low}, {high}]")
    check(k["regime"] in ("compute", "memory", "overhead"), f"{k['name']}: regime {k['regime']}")
    if k["regime"] == "compute":
        check(k["flops"] / peak >= k["bytes"] / bandwidth, f"{k['name']}: compute-bound by bytes")
    check(k["ops"].startswith(k["kind"]), f"{k['name']}: kind {k['kind']} vs ops {k['ops']}")
    check("constant" not in k["ops"].split(": ")[-1].split(", "), f"{k['name']}: lists a constant")
check(any(k["kind"].startswith("fused") for k in kernels) or entry == "sample",
      "no fused kernel in an -O2 entry")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"profile {entry}: {len(kernels)} kernels, {launches} launches, {flops:.0f} FLOPs, "
      f"{nbytes:.0f} bytes: matches the report")
