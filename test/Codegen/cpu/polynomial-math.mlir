// RUN: tfc-opt %s --tfc-polynomial-math | FileCheck %s

// Tests that tanh and erf become arith and LLVM's fma intrinsic (no math.fma
// for the pipeline's convert-math-to-libm to make a call of fmaf; see
// gelu-vectorizes.mlir), scalars and vectors alike, and that other math ops
// stay for their LLVM intrinsics.
// CHECK-LABEL: func.func @approximated
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.fma
// CHECK: llvm.intr.fma({{.*}}) : (f32, f32, f32) -> f32
// CHECK: llvm.intr.fma({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK: arith.divf
// CHECK: math.exp
// CHECK: return
func.func @approximated(%x: f32, %v: vector<8xf32>) -> (f32, f32, vector<8xf32>, f32) {
  %t = math.tanh %x : f32
  %e = math.erf %x : f32
  %w = math.tanh %v : vector<8xf32>
  %x2 = math.exp %x : f32
  return %t, %e, %w, %x2 : f32, f32, vector<8xf32>, f32
}
