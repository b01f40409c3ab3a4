// REQUIRES: cuda-target
// RUN: not tfc %s --target=cuda -o %t.so 2>&1 | FileCheck %s
// RUN: not ls %t.so

// Tests that a paged KV cache (the CPU's for now) is refused by the CUDA
// target with a message that says what to do, and no artifact is written.

// CHECK: paged-refused.mlir:{{[0-9]+}}:{{[0-9]+}}: error: the paged KV cache (--set kv_block) has no CUDA kernels yet: compile this model for the CPU, or without kv_block for CUDA

tfc.state @pool.k : tensor<10x2x2x4xf32> = "zeros"
func.func @decode_rows(%x: tensor<3x2x1x4xf32> {tfc.name = "x"}, %pos: tensor<3xi32> {tfc.name = "pos"},
                       %blocks: tensor<3x4xi32> {tfc.name = "blocks"}) -> tensor<3x2x1x4xf32> {
  %kc = tfc.load @pool.k : tensor<10x2x2x4xf32>
  %kc2 = tfc.kv_cache_update %kc, %x, %pos blocks %blocks dim = 2 : (tensor<10x2x2x4xf32>, tensor<3x2x1x4xf32>, tensor<3xi32>, tensor<3x4xi32>) -> tensor<10x2x2x4xf32>
  tfc.store %kc2, @pool.k : tensor<10x2x2x4xf32>
  %a = tfc.paged_attention %x, %kc2, %kc2, %blocks, %pos : (tensor<3x2x1x4xf32>, tensor<10x2x2x4xf32>, tensor<10x2x2x4xf32>, tensor<3x4xi32>, tensor<3xi32>) -> tensor<3x2x1x4xf32>
  return %a : tensor<3x2x1x4xf32>
}
