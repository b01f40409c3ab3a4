// RUN: tfc-opt %s --tfc-cpu-merge-aliased-args | FileCheck %s

// Tests that a result buffer that every call also passes as an operand
// becomes one argument (the in-place update of AdamW), while positions that
// differ between calls stay separate.

// CHECK-LABEL: func.func private @k0_update(
// CHECK-SAME:      %[[P:.*]]: memref<8xf32>, %[[G:.*]]: memref<8xf32>, %[[M:.*]]: memref<8xf32>) attributes {tfc.kernel}
// CHECK:         memref.load %[[P]]
// CHECK:         memref.load %[[G]]
// CHECK:         memref.store %{{.*}}, %[[P]]
// CHECK:         memref.store %{{.*}}, %[[M]]
func.func private @k0_update(%p: memref<8xf32>, %g: memref<8xf32>, %out: memref<8xf32>, %m: memref<8xf32>) attributes {tfc.kernel} {
  %c0 = arith.constant 0 : index
  %x = memref.load %p[%c0] : memref<8xf32>
  %y = memref.load %g[%c0] : memref<8xf32>
  %s = arith.addf %x, %y : f32
  memref.store %s, %out[%c0] : memref<8xf32>
  memref.store %s, %m[%c0] : memref<8xf32>
  return
}

// CHECK-LABEL: func.func @step(
// CHECK-SAME:      %[[A:.*]]: memref<8xf32>, %[[B:.*]]: memref<8xf32>, %[[C:.*]]: memref<8xf32>)
// CHECK:         call @k0_update(%[[A]], %[[B]], %[[C]]) : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
// CHECK:         call @k0_update(%[[B]], %[[A]], %[[A]]) : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
func.func @step(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>) {
  call @k0_update(%a, %b, %a, %c) : (memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
  call @k0_update(%b, %a, %b, %a) : (memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
  return
}
