// RUN: tfc-opt %s -tfc-autodiff -tfc-data-parallel="size=2" | FileCheck %s --check-prefix=ONE
// RUN: tfc-opt %s -tfc-autodiff -tfc-data-parallel="size=2 bucket-mb=0" | FileCheck %s --check-prefix=ZERO
// RUN: tfc-opt %s -tfc-autodiff -tfc-data-parallel="size=2 bucket-mb=0.00005" | FileCheck %s --check-prefix=CAP
// RUN: tfc-opt %s -tfc-autodiff -tfc-data-parallel="size=2 bucket-mb=0.00005 overlap=false" | FileCheck %s --check-prefix=BLOCK
// RUN: tfc-opt %s -tfc-autodiff -tfc-data-parallel="size=4 bucket-mb=0.00005" -tfc-train-step -tfc-schedule | FileCheck %s --check-prefix=STEP
// RUN: tfc %s -o - --optimizer=sgd --dp=2 --dp-bucket-mb=0.00005 --compile-to=llvm --emit=mlir | FileCheck %s --check-prefix=LLVM
// RUN: tfc %s -o /dev/null --optimizer=sgd --dp=4 --dp-bucket-mb=0 --compile-to=kernels --emit=mlir --report=%t.json
// RUN: FileCheck %s --check-prefix=REPORT < %t.json

// Gradient buckets of tfc-data-parallel. The loss (4 bytes) is final first,
// then, in the backward, grad.c (64 bytes), grad.a (64) and grad.b (16).

// Tests the default (25 MB): one bucket, started right after the last value
// becomes final (grad.b's reduce_sum and its reshape), waited for before the
// return, whose operands are the bucket's results in the results' order.
// ONE-LABEL: func.func @loss_grad(
// ONE: %[[L:.*]] = tfc.reduce_mean
// ONE: %[[GC:.*]] = tfc.matmul %{{.*}} transpose_lhs
// ONE: %[[GA:.*]] = tfc.matmul %arg0, %{{.*}} transpose_lhs
// ONE: tfc.reduce_sum
// ONE-NEXT: %[[GB:.*]] = tfc.reshape
// ONE-NEXT: %[[P:.*]]:4 = tfc.all_reduce_start %[[L]], %[[GC]], %[[GA]], %[[GB]] {bucket = 0 : i64, group = "dp", reduce = "mean", size = 2 : i64} : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>
// ONE-NEXT: %[[R:.*]]:4 = tfc.all_reduce_wait %[[P]]#0, %[[P]]#1, %[[P]]#2, %[[P]]#3 {bucket = 0 : i64}
// ONE-NEXT: return %[[R]]#0, %[[R]]#2, %[[R]]#3, %[[R]]#1
// ONE-NOT: tfc.all_reduce

// Tests bucket-mb=0: one bucket per value, each started right after the op
// that makes it final, so that it overlaps the rest of the backward; the
// waits come together before the return.
// ZERO-LABEL: func.func @loss_grad(
// ZERO: %[[L:.*]] = tfc.reduce_mean
// ZERO-NEXT: %[[P0:.*]] = tfc.all_reduce_start %[[L]] {bucket = 0 : i64, {{.*}}} : tensor<f32> -> tensor<f32>
// ZERO: %[[GC:.*]] = tfc.matmul %{{.*}} transpose_lhs
// ZERO-NEXT: %[[P1:.*]] = tfc.all_reduce_start %[[GC]] {bucket = 1 : i64, {{.*}}} : tensor<4x4xf32> -> tensor<4x4xf32>
// ZERO: tfc.linear
// ZERO-NEXT: %[[GA:.*]] = tfc.matmul %arg0, %{{.*}} transpose_lhs
// ZERO-NEXT: %[[P2:.*]] = tfc.all_reduce_start %[[GA]] {bucket = 2 : i64, {{.*}}} : tensor<4x4xf32> -> tensor<4x4xf32>
// ZERO-NEXT: tfc.reduce_sum
// ZERO-NEXT: %[[GB:.*]] = tfc.reshape
// ZERO-NEXT: %[[P3:.*]] = tfc.all_reduce_start %[[GB]] {bucket = 3 : i64, {{.*}}} : tensor<4xf32> -> tensor<4xf32>
// ZERO-NEXT: %[[R0:.*]] = tfc.all_reduce_wait %[[P0]] {bucket = 0 : i64}
// ZERO-NEXT: %[[R1:.*]] = tfc.all_reduce_wait %[[P1]] {bucket = 1 : i64}
// ZERO-NEXT: %[[R2:.*]] = tfc.all_reduce_wait %[[P2]] {bucket = 2 : i64}
// ZERO-NEXT: %[[R3:.*]] = tfc.all_reduce_wait %[[P3]] {bucket = 3 : i64}
// ZERO-NEXT: return %[[R0]], %[[R2]], %[[R3]], %[[R1]]

// Tests a cap of 52 bytes: a bucket closes once it holds at least the cap,
// so {loss, grad.c} (68 bytes), {grad.a} (64), {grad.b} (16, the rest).
// CAP-LABEL: func.func @loss_grad(
// CAP: %[[L:.*]] = tfc.reduce_mean
// CAP: %[[GC:.*]] = tfc.matmul %{{.*}} transpose_lhs
// CAP-NEXT: %[[P0:.*]]:2 = tfc.all_reduce_start %[[L]], %[[GC]] {bucket = 0 : i64, {{.*}}} : tensor<f32>, tensor<4x4xf32> ->
// CAP: %[[P1:.*]] = tfc.all_reduce_start %{{.*}} {bucket = 1 : i64, {{.*}}} : tensor<4x4xf32> ->
// CAP: %[[P2:.*]] = tfc.all_reduce_start %{{.*}} {bucket = 2 : i64, {{.*}}} : tensor<4xf32> ->
// CAP-NEXT: %[[R0:.*]]:2 = tfc.all_reduce_wait %[[P0]]#0, %[[P0]]#1 {bucket = 0 : i64}
// CAP-NEXT: %[[R1:.*]] = tfc.all_reduce_wait %[[P1]] {bucket = 1 : i64}
// CAP-NEXT: %[[R2:.*]] = tfc.all_reduce_wait %[[P2]] {bucket = 2 : i64}
// CAP-NEXT: return %[[R0]]#0, %[[R1]], %[[R2]], %[[R0]]#1

// Tests overlap=false: each wait right after its start (a blocking baseline).
// BLOCK-LABEL: func.func @loss_grad(
// BLOCK: %[[P0:.*]]:2 = tfc.all_reduce_start
// BLOCK-NEXT: tfc.all_reduce_wait %[[P0]]#0, %[[P0]]#1 {bucket = 0 : i64}
// BLOCK: %[[P1:.*]] = tfc.all_reduce_start
// BLOCK-NEXT: tfc.all_reduce_wait %[[P1]] {bucket = 1 : i64}
// BLOCK: %[[P2:.*]] = tfc.all_reduce_start
// BLOCK-NEXT: tfc.all_reduce_wait %[[P2]] {bucket = 2 : i64}
// BLOCK-NEXT: return

// Tests that in train_step, after tfc-schedule, each start still comes right
// after the op that makes its last value final (not sunk to its wait), and
// the waits come before the clipping reads the averaged gradients.
// STEP-LABEL: func.func @train_step(
// STEP: tfc.matmul %{{.*}} transpose_lhs
// STEP-NEXT: tfc.all_reduce_start {{.*}}bucket = 0 : i64{{.*}}size = 4 : i64
// STEP: tfc.matmul %arg0, %{{.*}} transpose_lhs
// STEP: tfc.all_reduce_start {{.*}}bucket = 1 : i64
// STEP: tfc.all_reduce_start {{.*}}bucket = 2 : i64
// STEP: tfc.all_reduce_wait {{.*}}bucket = 0 : i64
// STEP: tfc.all_reduce_wait {{.*}}bucket = 1 : i64
// STEP: tfc.all_reduce_wait {{.*}}bucket = 2 : i64
// STEP: tfc.sqrt
// STEP: tfc.store

// Tests the CPU lowering: each start and wait is a call into the kernel
// library (which forwards to tfc_host_api_t.collective_start / _wait).
// LLVM-COUNT-3: llvm.call @tfc_kernels_collective_start_f32
// LLVM-NOT: llvm.call @tfc_kernels_collective_f32
// LLVM-COUNT-3: llvm.call @tfc_kernels_collective_wait_f32

// Tests the report: each bucket moves 2 (N-1)/N of its bytes over the link:
// 4 buckets at N=4: (4 + 64 + 64 + 16) x 6/4 = 6 + 96 + 96 + 24.
// REPORT: "train_step": {
// REPORT: "link_bytes": 222,

module attributes {tfc.metadata = "{\"model\": \"tiny\"}"} {
tfc.param @a : tensor<4x4xf32> = "normal(0.0, 1.0)"
tfc.param @b : tensor<4xf32> = "normal(0.0, 1.0)"
tfc.param @c : tensor<4x4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
  %a = tfc.load @a : tensor<4x4xf32>
  %b = tfc.load @b : tensor<4xf32>
  %c = tfc.load @c : tensor<4x4xf32>
  %h = tfc.linear %x, %a bias %b : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %t = tfc.tanh %h : tensor<2x4xf32>
  %y = tfc.matmul %t, %c : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %l = tfc.reduce_mean %y dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
}
