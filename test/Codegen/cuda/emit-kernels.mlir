// REQUIRES: cuda-target
// RUN: tfc-opt %s --tfc-lower-to-kernels=target=cuda --tfc-cuda-emit-kernels -split-input-file | FileCheck %s

// Tests of tfc-cuda-emit-kernels: the CUDA C++ each kernel becomes, kept on
// the kernel (now a declaration) with its launch size.

// Tests that a pointwise op reads a broadcast operand through the
// coordinates of the output index and that the kernel is a grid-stride loop
// over the output elements.

// CHECK-LABEL: func.func private @k0_add(memref<3x4xf32>, memref<4xf32>, memref<3x4xf32>)
// CHECK-SAME:    tfc.cuda.source = "extern \22C\22 __global__ void k0_add(const float* in0, const float* in1, float* out0) {
// CHECK-SAME:    const long long n = 12LL;
// CHECK-SAME:    i += (long long)gridDim.x * blockDim.x
// CHECK-SAME:    const long long c1 = rest % 4LL;
// CHECK-SAME:    const float a0 = in0[i];
// CHECK-SAME:    const float a1 = in1[c1 * 1LL];
// CHECK-SAME:    const float v0 = (a0 + a1);
// CHECK-SAME:    out0[i] = v0;
// CHECK-SAME:    tfc.cuda.threads = 12 : i64
func.func @add(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %0 = tfc.add %a, %b : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Tests that a fused pointwise group is one loop computing every op of the
// group in registers and storing only the group's result, and that bf16 is
// widened on load and rounded once at the store.

// CHECK-LABEL: func.func private @k0_fused(memref<8xbf16>, memref<8xbf16>)
// CHECK-SAME:    const float a0 = tfc_bf16_to_f32(in0[i]);
// CHECK-SAME:    expf(
// CHECK-SAME:    tanhf(
// CHECK-SAME:    out0[i] = tfc_f32_to_bf16(
// CHECK-NOT:     out1
func.func @chain(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %0 = tfc.fused "pointwise" (%x) : (tensor<8xbf16>) -> tensor<8xbf16> {
  ^bb0(%a: tensor<8xbf16>):
    %1 = tfc.exp %a : tensor<8xbf16>
    %2 = tfc.tanh %1 : tensor<8xbf16>
    tfc.yield %2 : tensor<8xbf16>
  }
  return %0 : tensor<8xbf16>
}

// -----

// Tests that softmax along a middle dimension walks lines of stride `inner`
// (here 5), one thread per line, subtracting the line's maximum.

// CHECK-LABEL: func.func private @k0_softmax
// CHECK-SAME:    const long long n = 10LL;
// CHECK-SAME:    const long long base = (i / 5LL) * 15LL + i % 5LL;
// CHECK-SAME:    m = tfc_maximumf(m, in0[base + j * 5LL]);
// CHECK-SAME:    s += expf(in0[base + j * 5LL] - m);
// CHECK-SAME:    tfc.cuda.threads = 10 : i64
func.func @softmax(%x: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  %0 = tfc.softmax %x dim = 1 : tensor<2x3x5xf32> -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}
