// `tfc --target=cuda --report` says, per entry, how many of the kernels it
// launches are tiled (their own launch shape) and which ops took the
// one-thread-an-item kernel instead of their tiled one, and why: attention
// (more query rows than a decode step's 4) whose head dim flash attention
// cannot take, a reduction over dimensions that
// are not one contiguous block, softmax along a dimension that is not the
// last. The tiled ones (16-bit matmul, the contiguous reduction) are not
// listed.
// REQUIRES: cuda-target
// RUN: tfc %s --target=cuda --cuda-arch=sm_80 --compile-to=codegen -o %t.mlir --report=%t.json
// RUN: FileCheck %s < %t.json

// CHECK: "forward": {
// CHECK: "cuda": {
// CHECK-NEXT: "tiled_kernels": 2,
// CHECK-NEXT: "grid_stride_kernels": 3,
// CHECK-NEXT: "fallbacks": [
// CHECK-NEXT: {
// CHECK-NEXT: "kernel": "k0_attention",
// CHECK-NEXT: "why": "head dims 8 and 8 (flash attention takes multiples of 16 up to 128)"
// CHECK: "kernel": "k1_reduce_sum",
// CHECK-NEXT: "why": "the reduced dimensions are not one contiguous block"
// CHECK: "kernel": "k4_softmax",
// CHECK-NEXT: "why": "along dimension 0, not the last (a warp a row takes contiguous rows)"
// CHECK-NOT: "kernel"
// CHECK: ]

func.func @forward(%q: tensor<1x2x8x8xbf16>, %k: tensor<1x2x8x8xbf16>, %v: tensor<1x2x8x8xbf16>,
                   %x: tensor<3x4x5xf32>, %a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>)
    -> (tensor<1x2x8x8xbf16>, tensor<4xf32>, tensor<3x4xf32>, tensor<64x16xbf16>, tensor<3x4x5xf32>)
    {
  %0 = tfc.attention %q, %k, %v causal : (tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16>, tensor<1x2x8x8xbf16>) -> tensor<1x2x8x8xbf16>
  %1 = tfc.reduce_sum %x dims = [0, 2] : tensor<3x4x5xf32> -> tensor<4xf32>
  %2 = tfc.reduce_sum %x dims = [2] : tensor<3x4x5xf32> -> tensor<3x4xf32>
  %3 = tfc.matmul %a, %b : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  %4 = tfc.softmax %x dim = 0 : tensor<3x4x5xf32> -> tensor<3x4x5xf32>
  return %0, %1, %2, %3, %4 : tensor<1x2x8x8xbf16>, tensor<4xf32>, tensor<3x4xf32>, tensor<64x16xbf16>, tensor<3x4x5xf32>
}
