// Tests `tfc --report=FILE.json`: per entry, the kernels, bytes and FLOPs by
// the cost model, the arena against its lower bound, and what tfc-fuse
// decided; with --no-fuse the same entry has three kernels and moves more.

// RUN: tfc %s -o /dev/null --compile-to=kernels --emit=mlir --report=%t.json
// RUN: FileCheck %s --check-prefix=ON < %t.json
// RUN: tfc %s -o /dev/null --compile-to=kernels --emit=mlir --report=%t.off.json --no-fuse
// RUN: FileCheck %s --check-prefix=OFF < %t.off.json
// RUN: not tfc %s -o /dev/null --compile-to=graph --emit=mlir --report=%t.bad.json 2>&1 | FileCheck %s --check-prefix=PHASE
// RUN: not tfc %s -o /dev/null --remat-budget=lots 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not tfc %s -o /dev/null --compile-to=kernels --emit=mlir --report=%t.missing/dir/r.json 2>&1 | FileCheck %s --check-prefix=WRITE

// ON: "settings": "-O2",
// ON: "forward": {
// ON-NEXT: "kernels": 1,
// 256 elements: add 1, gelu 8 (a transcendental), mul 1 FLOP each.
// ON-NEXT: "flops": 2560,
// x (1 KiB) and the bias in, y out.
// ON-NEXT: "bytes_read": 1280,
// ON-NEXT: "bytes_written": 1024,
// ON-NEXT: "bytes_moved": 2304,
// ON-NEXT: "bytes_moved_matmul_like": 0,
// ON-NEXT: "bytes_moved_other": 2304,
// The result is written straight into the output: no arena bytes.
// ON-NEXT: "arena_bytes": 64,
// ON-NEXT: "live_bound_bytes": 0,
// ON-NEXT: "intermediate_bytes": 0,
// ON: "kind": "fused.pointwise",
// ON-NEXT: "count": 1,
// ON: "fusion": {
// ON-NEXT: "attention": 0,
// ON-NEXT: "bytes_after": 2304,
// ON-NEXT: "bytes_before": 6404,
// ON-NEXT: "groups": 1,
// ON-NEXT: "kernels_after": 1,
// ON-NEXT: "kernels_before": 3

// OFF: "settings": "-O2 --no-fuse",
// OFF: "kernels": 3,
// OFF: "bytes_moved": 6404,
// OFF: "intermediate_bytes": 2048,
// OFF-NOT: "fusion"

// PHASE: tfc: error: --report needs the kernels phase; it is not reached with --compile-to=graph
// BUDGET: tfc: error: --remat-budget='lots' is not a size (bytes, or a number with KB, MB, GB, KiB, MiB, GiB)
// WRITE: tfc: error: cannot write '{{.*}}r.json'

func.func @forward(%x: tensor<4x64xf32>, %b: tensor<64xf32>) -> tensor<4x64xf32> {
  %c = tfc.constant dense<0.5> : tensor<f32>
  %t = tfc.add %x, %b : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>
  %u = tfc.gelu %t approximate = tanh : tensor<4x64xf32>
  %y = tfc.mul %u, %c : tensor<4x64xf32>, tensor<f32> -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}
