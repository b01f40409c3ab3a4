// RUN: tfc %s --cpu=x86-64-v3 --emit=llvm -o - | FileCheck %s

// Tests that GELU (tanh approximation) and its gradient's tanh compile to
// vector code with no call into libm: the polynomial tanh's multiply-adds are
// LLVM's fma intrinsic, which the loop vectorizer widens (8 lanes of AVX2),
// not libm's scalar fmaf, which it cannot (and which cost a GPT-2 training
// step a quarter of its time).
// CHECK-NOT: call float @fmaf
// CHECK-NOT: call float @tanhf
// CHECK: call <8 x float> @llvm.fma.v8f32
// CHECK-NOT: call float @fmaf
// CHECK-NOT: call float @tanhf
func.func @forward(%x: tensor<64x256xf32> {tfc.name = "x"}) -> tensor<64x256xf32> {
  %0 = tfc.gelu %x approximate = tanh : tensor<64x256xf32>
  return %0 : tensor<64x256xf32>
}
