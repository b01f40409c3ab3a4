// Tests `tfc --dp=N`: train_step averages the loss and the gradient over the
// ranks (tfc-data-parallel), the report counts the bytes one rank sends (a
// ring all-reduce of B bytes over N ranks sends 2 (N-1)/N B), the CPU code
// calls the runtime's communicator, and the metadata records the world size.

// RUN: tfc %s -o /dev/null --optimizer=sgd --dp=4 --compile-to=kernels --emit=mlir --report=%t.json
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: tfc %s -o - --optimizer=sgd --dp=4 --compile-to=llvm --emit=mlir | FileCheck %s --check-prefix=LLVM
// RUN: tfc %s -o - --optimizer=sgd --dp=4 --dp-bucket-mb=-1 --compile-to=llvm --emit=mlir | FileCheck %s --check-prefix=BLOCKING
// RUN: not tfc %s -o /dev/null --optimizer=sgd --dp=2 --dp-bucket-mb=inf 2>&1 | FileCheck %s --check-prefix=BUCKET
// RUN: tfc %s -o - --optimizer=sgd --dp=2 --compile-to=graph --emit=mlir | FileCheck %s --check-prefix=GRAPH
// RUN: not tfc %s -o /dev/null --dp=2 2>&1 | FileCheck %s --check-prefix=NOOPT
// RUN: not tfc %s -o /dev/null --optimizer=sgd --dp=-1 2>&1 | FileCheck %s --check-prefix=NEG

// The gradient of @w (4x4 f32, 64 bytes) and the loss (4 bytes), each
// 2 * 3/4 of its bytes: 96 + 6 (integer division per tensor: 6).
// REPORT: "train_step": {
// REPORT: "link_bytes": 102,
// LLVM: llvm.mlir.global internal constant @tfc_group_dp("dp\00")
// The loss and the gradient in one bucket (the default 25 MB): one start, one wait.
// LLVM-COUNT-1: llvm.call @tfc_kernels_collective_start_f32
// LLVM-COUNT-1: llvm.call @tfc_kernels_collective_wait_f32
// BLOCKING-COUNT-2: llvm.call @tfc_kernels_collective_f32
// BUCKET: tfc: error: --dp-bucket-mb=inf: give a bucket size in MB (0: one collective per gradient; -1: one blocking all-reduce per gradient)
// GRAPH: module attributes {{{.*}}tfc.metadata = "{\22world_size\22: 2}"
// GRAPH-LABEL: func.func @train_step(
// GRAPH: tfc.all_reduce_start %{{.*}}, %{{.*}} {bucket = 0 : i64, group = "dp", reduce = "mean", size = 2 : i64}
// NOOPT: tfc: error: --dp=2 averages the gradients of train_step: it needs --optimizer
// NEG: tfc: error: --dp=-1: give the number of processes, 1 or more

tfc.param @w : tensor<4x4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4x4xf32>
  %y = tfc.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %l = tfc.reduce_mean %y dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
