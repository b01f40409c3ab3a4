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

// Two views of one arena at the same offset are one buffer, though each is its
// own memref.view with its own constant (the memory plan's in-place reuse);
// views at different offsets, or of different arenas, stay separate.

// CHECK-LABEL: func.func private @k1_gelu_grad(
// CHECK-SAME:      %[[X:.*]]: memref<16xf32>, %[[DY:.*]]: memref<16xf32>) attributes {tfc.kernel}
// CHECK:         memref.load %[[DY]]
// CHECK:         memref.store %{{.*}}, %[[DY]]
func.func private @k1_gelu_grad(%x: memref<16xf32>, %dy: memref<16xf32>, %dx: memref<16xf32>) attributes {tfc.kernel} {
  %c0 = arith.constant 0 : index
  %a = memref.load %x[%c0] : memref<16xf32>
  %b = memref.load %dy[%c0] : memref<16xf32>
  %s = arith.mulf %a, %b : f32
  memref.store %s, %dx[%c0] : memref<16xf32>
  return
}

// CHECK-LABEL: func.func @backward(
// CHECK:         %[[V0:.*]] = memref.view %arg0[%c0]
// CHECK:         %[[V1:.*]] = memref.view %arg0[%c64]
// CHECK:         call @k1_gelu_grad(%[[V0]], %[[V1]]) : (memref<16xf32>, memref<16xf32>) -> ()
// CHECK:         call @k2_copy(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
func.func @backward(%arena: memref<256xi8>, %other: memref<256xi8>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c64_again = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %x = memref.view %arena[%c0][] : memref<256xi8> to memref<16xf32>
  %dy = memref.view %arena[%c64][] : memref<256xi8> to memref<16xf32>
  %dx = memref.view %arena[%c64_again][] : memref<256xi8> to memref<16xf32>
  call @k1_gelu_grad(%x, %dy, %dx) : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
  %y = memref.view %arena[%c128][] : memref<256xi8> to memref<16xf32>
  %z = memref.view %other[%c64][] : memref<256xi8> to memref<16xf32>
  call @k2_copy(%dy, %y, %z) : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
  return
}

// CHECK-LABEL: func.func private @k2_copy(
// CHECK-SAME:      memref<16xf32>, %{{.*}}: memref<16xf32>, %{{.*}}: memref<16xf32>) attributes {tfc.kernel}
func.func private @k2_copy(%a: memref<16xf32>, %b: memref<16xf32>, %c: memref<16xf32>) attributes {tfc.kernel} {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<16xf32>
  memref.store %v, %b[%c0] : memref<16xf32>
  memref.store %v, %c[%c0] : memref<16xf32>
  return
}
