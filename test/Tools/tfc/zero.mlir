// Tests `tfc --dp=N --zero=1` (ZeRO-1): the gradients are reduce-scattered and
// the parameters all-gathered (tfc-zero-shard, tfc-train-step), the report
// shows the optimizer state of one rank N x smaller than with plain DP and the
// link bytes of the two halves of the ring, the CPU code calls the
// communicator for each, and bad flag combinations are refused by name.

// RUN: tfc %s -o /dev/null --optimizer=adamw --dp=4 --compile-to=kernels --emit=mlir --report=%t.dp.json
// RUN: FileCheck %s --check-prefix=DP < %t.dp.json
// RUN: tfc %s -o /dev/null --optimizer=adamw --dp=4 --zero=1 --compile-to=kernels --emit=mlir --report=%t.zero.json
// RUN: FileCheck %s --check-prefix=ZERO < %t.zero.json
// RUN: tfc %s -o - --optimizer=adamw --dp=4 --zero=1 --compile-to=llvm --emit=mlir | FileCheck %s --check-prefix=LLVM
// RUN: tfc %s -o - --optimizer=adamw --dp=2 --zero=1 --compile-to=graph --emit=mlir | FileCheck %s --check-prefix=GRAPH
// RUN: not tfc %s -o /dev/null --optimizer=adamw --zero=1 2>&1 | FileCheck %s --check-prefix=NODP
// RUN: not tfc %s -o /dev/null --zero=1 2>&1 | FileCheck %s --check-prefix=NOOPT
// RUN: not tfc %s -o /dev/null --optimizer=adamw --dp=2 --zero=3 2>&1 | FileCheck %s --check-prefix=STAGE

// @w is 4x4 f32 (64 bytes): AdamW's m and v are 128 bytes on every rank with
// plain DP, 2 x 4 floats = 32 bytes per rank with ZeRO-1 over 4 ranks.
// DP: "memory_per_rank": {
// DP-NEXT: "parameter_bytes": 64,
// DP-NEXT: "state_bytes": 136,
// DP-NEXT: "optimizer_state_bytes": 128
// ZERO: "memory_per_rank": {
// ZERO-NEXT: "parameter_bytes": 64,
// ZERO-NEXT: "state_bytes": 40,
// ZERO-NEXT: "optimizer_state_bytes": 32
// Link bytes: the loss all-reduce 2 x 3/4 x 4 = 6; the gradient's
// reduce-scatter and the parameter's all-gather 3/4 x 64 = 48 each; the
// norm's all-reduce 6; the rank's reduce-scatter of 4 floats 12: 120.
// ZERO: "train_step": {
// ZERO: "link_bytes": 120,
// LLVM-COUNT-5: llvm.call @tfc_kernels_collective_f32
// GRAPH: tfc.metadata = "{\22zero_shards\22: \22opt.m.w=w,opt.v.w=w\22, \22world_size\22: 2}"
// GRAPH: tfc.state @opt.m.w : tensor<8xf32> = "zeros"
// GRAPH-LABEL: func.func @train_step(
// GRAPH: tfc.reduce_scatter %{{.*}} {group = "dp", reduce = "mean", size = 2 : i64} : tensor<16xf32> -> tensor<8xf32>
// GRAPH: tfc.all_gather %{{.*}} {group = "dp", size = 2 : i64} : tensor<8xf32> -> tensor<16xf32>
// NODP: tfc: error: --zero=1 shards the optimizer's state over data-parallel ranks: it needs --dp=N (N processes under mpirun)
// NOOPT: tfc: error: --zero=1 shards the optimizer's state: it needs --optimizer=adamw|sgd (and --dp=N)
// STAGE: tfc: error: --zero=3: only ZeRO stage 1 (optimizer state sharded) is built; give --zero=1 or --zero=0

tfc.param @w : tensor<4x4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4x4xf32>
  %y = tfc.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %l = tfc.reduce_mean %y dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
