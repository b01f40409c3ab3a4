// RUN: tfc-opt %s --tfc-polynomial-math | FileCheck %s

// Tests that tanh, erf and f32 exp become arith and LLVM's fma and floor
// intrinsics (no math.fma for the pipeline's convert-math-to-libm to make a
// call of fmaf; see gelu-vectorizes.mlir), scalars and vectors alike, and
// that other math ops (f64 exp here) stay for their LLVM intrinsics.
// CHECK-LABEL: func.func @approximated
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.fma
// CHECK-NOT: math.exp {{.*}} : f32
// CHECK: llvm.intr.fma({{.*}}) : (f32, f32, f32) -> f32
// CHECK: llvm.intr.fma({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK: arith.divf
// CHECK: llvm.intr.floor({{.*}}) : (f32) -> f32
// CHECK: arith.bitcast {{.*}} : i32 to f32
// CHECK: arith.cmpf uno
// CHECK: llvm.intr.floor({{.*}}) : (vector<8xf32>) -> vector<8xf32>
// CHECK: arith.bitcast {{.*}} : vector<8xi32> to vector<8xf32>
// CHECK: math.exp {{.*}} : f64
// CHECK: return
func.func @approximated(%x: f32, %v: vector<8xf32>, %d: f64) -> (f32, f32, vector<8xf32>, f32, vector<8xf32>, f64) {
  %t = math.tanh %x : f32
  %e = math.erf %x : f32
  %w = math.tanh %v : vector<8xf32>
  %x2 = math.exp %x : f32
  %v2 = math.exp %v : vector<8xf32>
  %d2 = math.exp %d : f64
  return %t, %e, %w, %x2, %v2, %d2 : f32, f32, vector<8xf32>, f32, vector<8xf32>, f64
}
