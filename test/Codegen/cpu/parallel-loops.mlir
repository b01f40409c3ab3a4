// RUN: tfc-opt %s --tfc-cpu-parallel-loops --canonicalize -split-input-file | FileCheck %s

// Tests that a large parallel loop at the top of a kernel moves into a part
// over [begin, end) of its collapsed leading dimensions (4 x 8 rows; the
// innermost stays a dimension of its own), that a scalar loaded before the
// loop is passed to the part, and that constants are recomputed there.

// CHECK-LABEL: func.func private @k0_add(
// CHECK-SAME:      %[[A:.*]]: memref<4x8x2048xf32>, %[[POS:.*]]: memref<i64>, %[[C:.*]]: memref<4x8x2048xf32>)
// CHECK:         %[[P:.*]] = memref.load %[[POS]][]
// CHECK:         %[[PF:.*]] = arith.sitofp %[[P]]
// CHECK-NOT:     scf.parallel
// CHECK:         call @k0_add_part0(%[[A]], %[[POS]], %[[C]], %[[PF]], %{{.*}}, %{{.*}})
// CHECK:       func.func private @k0_add_part0(
// CHECK-SAME:      %{{.*}}: memref<4x8x2048xf32>, %{{.*}}: memref<i64>, %{{.*}}: memref<4x8x2048xf32>, %[[SCALAR:.*]]: f32, %[[BEGIN:.*]]: index, %[[END:.*]]: index)
// CHECK-SAME:      tfc.parallel = array<i64: 32, 4>
// CHECK:         %[[C2048:.*]] = arith.constant 2048 : index
// CHECK:         scf.parallel (%[[ROW:.*]], %[[K:.*]]) = (%[[BEGIN]], %{{.*}}) to (%[[END]], %[[C2048]])
// CHECK:           arith.addf %{{.*}}, %[[SCALAR]]
func.func private @k0_add(%a: memref<4x8x2048xf32>, %pos: memref<i64>, %c: memref<4x8x2048xf32>) attributes {tfc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c2048 = arith.constant 2048 : index
  %p = memref.load %pos[] : memref<i64>
  %pf = arith.sitofp %p : i64 to f32
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c4, %c8, %c2048) step (%c1, %c1, %c1) {
    %x = memref.load %a[%i, %j, %k] : memref<4x8x2048xf32>
    %s = arith.addf %x, %pf : f32
    memref.store %s, %c[%i, %j, %k] : memref<4x8x2048xf32>
  }
  return
}

// -----

// Tests that a view of an argument is recomputed in the part, and that with
// only unit dimensions before the innermost, the innermost is split.

// CHECK-LABEL: func.func private @k0_scale(
// CHECK:         call @k0_scale_part0(
// CHECK:       func.func private @k0_scale_part0(
// CHECK-SAME:      tfc.parallel = array<i64: 65536, 8192>
// CHECK:         %[[FLAT:.*]] = memref.collapse_shape
// CHECK:         scf.parallel
// CHECK:           memref.load %[[FLAT]]
func.func private @k0_scale(%a: memref<1x65536xf32>, %c: memref<1x65536xf32>) attributes {tfc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 65536 : index
  %two = arith.constant 2.0 : f32
  %flat = memref.collapse_shape %a [[0, 1]] : memref<1x65536xf32> into memref<65536xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c1, %n) step (%c1, %c1) {
    %x = memref.load %flat[%j] : memref<65536xf32>
    %s = arith.mulf %x, %two : f32
    memref.store %s, %c[%i, %j] : memref<1x65536xf32>
  }
  return
}

// -----

// Tests that a small loop (not worth waking a thread) stays serial, that a
// dense scratch buffer the kernel allocated is passed to the part, and that a
// loop capturing a view at a run-time offset (not a dense buffer) stays serial.

// CHECK-LABEL: func.func private @k0_small(
// CHECK:         scf.parallel
// CHECK-NOT:     call
// CHECK-LABEL: func.func private @k1_scratch(
// CHECK:         %[[S:.*]] = memref.alloc() : memref<65536xf32>
// CHECK:         call @k1_scratch_part0(%{{.*}}, %{{.*}}, %[[S]], %{{.*}}, %{{.*}})
// CHECK:         memref.dealloc %[[S]]
// CHECK-LABEL: func.func private @k1_scratch_part0(
// CHECK-SAME:      memref<65536xf32>, %{{.*}}: memref<65536xf32>, %{{.*}}: memref<65536xf32>, %{{.*}}: index, %{{.*}}: index)
// CHECK-LABEL: func.func private @k2_window(
// CHECK:         memref.subview
// CHECK:         scf.parallel
// CHECK-NOT:     func.func private @k2_window_part
func.func private @k0_small(%a: memref<768xf32>, %c: memref<768xf32>) attributes {tfc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 768 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %a[%i] : memref<768xf32>
    memref.store %x, %c[%i] : memref<768xf32>
  }
  return
}
func.func private @k1_scratch(%a: memref<65536xf32>, %c: memref<65536xf32>) attributes {tfc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 65536 : index
  %s = memref.alloc() : memref<65536xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %a[%i] : memref<65536xf32>
    memref.store %x, %s[%i] : memref<65536xf32>
    %y = memref.load %s[%i] : memref<65536xf32>
    memref.store %y, %c[%i] : memref<65536xf32>
  }
  memref.dealloc %s : memref<65536xf32>
  return
}
func.func private @k2_window(%a: memref<131072xf32>, %pos: memref<index>, %c: memref<65536xf32>) attributes {tfc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 65536 : index
  %p = memref.load %pos[] : memref<index>
  %w = memref.subview %a[%p] [65536] [1] : memref<131072xf32> to memref<65536xf32, strided<[1], offset: ?>>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %w[%i] : memref<65536xf32, strided<[1], offset: ?>>
    memref.store %x, %c[%i] : memref<65536xf32>
  }
  return
}

// -----

// Tests that an inner loop stepping by 0 (MLIR 19's scf.for verifier accepts
// it) counts as one iteration instead of dividing by its step (SIGFPE).

// CHECK-LABEL: func.func private @k0_zero_step(
func.func private @k0_zero_step(%a: memref<64x1024xf32>) attributes {tfc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    scf.for %j = %c1 to %c1024 step %c0 {
      %x = memref.load %a[%i, %j] : memref<64x1024xf32>
      memref.store %x, %a[%i, %j] : memref<64x1024xf32>
    }
  }
  return
}
