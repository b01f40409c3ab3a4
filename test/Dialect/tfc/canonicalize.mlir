// RUN: tfc-opt %s -split-input-file -canonicalize | FileCheck %s

// Folds and canonicalization patterns of the tfc dialect (TfcOps.cpp). Every
// chunk has a case that folds and one that must not.

// Tests that neg(neg(x)) folds to x, for floats and integers.

// CHECK-LABEL: func.func @neg_neg
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4xf32>, %[[I:arg[0-9]+]]: tensor<2xi32>)
// CHECK-NOT:     tfc.neg
// CHECK:         return %[[X]], %[[I]]
func.func @neg_neg(%x: tensor<4xf32>, %i: tensor<2xi32>) -> (tensor<4xf32>, tensor<2xi32>) {
  %0 = tfc.neg %x : tensor<4xf32>
  %1 = tfc.neg %0 : tensor<4xf32>
  %2 = tfc.neg %i : tensor<2xi32>
  %3 = tfc.neg %2 : tensor<2xi32>
  return %1, %3 : tensor<4xf32>, tensor<2xi32>
}

// -----

// Tests that a single neg, and neg of another unary op, do not fold.

// CHECK-LABEL: func.func @neg_no_fold
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[N:.*]] = tfc.neg %[[X]] : tensor<4xf32>
// CHECK-NEXT:    %[[A:.*]] = tfc.abs %[[X]] : tensor<4xf32>
// CHECK-NEXT:    %[[NA:.*]] = tfc.neg %[[A]] : tensor<4xf32>
// CHECK-NEXT:    return %[[N]], %[[NA]]
func.func @neg_no_fold(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = tfc.neg %x : tensor<4xf32>
  %1 = tfc.abs %x : tensor<4xf32>
  %2 = tfc.neg %1 : tensor<4xf32>
  return %0, %2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests that a cast to the operand's own type folds away.

// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x8xbf16>)
// CHECK-NOT:     tfc.cast
// CHECK:         return %[[X]]
func.func @cast_same_type(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = tfc.cast %x : tensor<4x8xbf16> -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

// Tests that a real cast stays, and that a round trip through a narrower type
// (f32 -> bf16 -> f32, which rounds) is not folded.

// CHECK-LABEL: func.func @cast_no_fold
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[B:.*]] = tfc.cast %[[X]] : tensor<4xf32> -> tensor<4xbf16>
// CHECK-NEXT:    %[[F:.*]] = tfc.cast %[[B]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK-NEXT:    return %[[B]], %[[F]]
func.func @cast_no_fold(%x: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %0 = tfc.cast %x : tensor<4xf32> -> tensor<4xbf16>
  %1 = tfc.cast %0 : tensor<4xbf16> -> tensor<4xf32>
  return %0, %1 : tensor<4xbf16>, tensor<4xf32>
}

// -----

// Tests that a reshape to the operand's own type folds away.

// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<2x3xi64>)
// CHECK-NOT:     tfc.reshape
// CHECK:         return %[[X]]
func.func @reshape_same_type(%x: tensor<2x3xi64>) -> tensor<2x3xi64> {
  %0 = tfc.reshape %x : tensor<2x3xi64> -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// Tests that reshape(reshape(x)) becomes one reshape from x, and vanishes when
// it returns to x's type.

// CHECK-LABEL: func.func @reshape_chain
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x6xf32>)
// CHECK-NEXT:    %[[R:.*]] = tfc.reshape %[[X]] : tensor<4x6xf32> -> tensor<2x12xf32>
// CHECK-NEXT:    return %[[R]], %[[X]]
func.func @reshape_chain(%x: tensor<4x6xf32>) -> (tensor<2x12xf32>, tensor<4x6xf32>) {
  %0 = tfc.reshape %x : tensor<4x6xf32> -> tensor<24xf32>
  %1 = tfc.reshape %0 : tensor<24xf32> -> tensor<2x12xf32>
  %2 = tfc.reshape %x : tensor<4x6xf32> -> tensor<3x8xf32>
  %3 = tfc.reshape %2 : tensor<3x8xf32> -> tensor<4x6xf32>
  return %1, %3 : tensor<2x12xf32>, tensor<4x6xf32>
}

// -----

// Tests that a reshape whose operand is not a reshape stays, and that an
// intermediate reshape with another use is kept for that use.

// CHECK-LABEL: func.func @reshape_no_fold
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x6xf32>)
// CHECK-NEXT:    %[[E:.*]] = tfc.exp %[[X]] : tensor<4x6xf32>
// CHECK-NEXT:    %[[R:.*]] = tfc.reshape %[[E]] : tensor<4x6xf32> -> tensor<24xf32>
// CHECK-NEXT:    %[[R2:.*]] = tfc.reshape %[[E]] : tensor<4x6xf32> -> tensor<2x12xf32>
// CHECK-NEXT:    return %[[R]], %[[R2]]
func.func @reshape_no_fold(%x: tensor<4x6xf32>) -> (tensor<24xf32>, tensor<2x12xf32>) {
  %0 = tfc.exp %x : tensor<4x6xf32>
  %1 = tfc.reshape %0 : tensor<4x6xf32> -> tensor<24xf32>
  %2 = tfc.reshape %1 : tensor<24xf32> -> tensor<2x12xf32>
  return %1, %2 : tensor<24xf32>, tensor<2x12xf32>
}

// -----

// Tests that a reshape of a constant folds into a constant of the new shape
// (dense and splat, float and integer).

// CHECK-LABEL: func.func @reshape_constant
// CHECK-DAG:     %[[C0:.*]] = tfc.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG:     %[[C1:.*]] = tfc.constant dense<7> : tensor<3x2xi32>
// CHECK-NOT:     tfc.reshape
// CHECK:         return %[[C0]], %[[C1]]
func.func @reshape_constant() -> (tensor<2x2xf32>, tensor<3x2xi32>) {
  %c = tfc.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = tfc.reshape %c : tensor<4xf32> -> tensor<2x2xf32>
  %s = tfc.constant dense<7> : tensor<6xi32>
  %1 = tfc.reshape %s : tensor<6xi32> -> tensor<3x2xi32>
  return %0, %1 : tensor<2x2xf32>, tensor<3x2xi32>
}

// -----

// Tests that a reshape of a non-constant operand stays.

// CHECK-LABEL: func.func @reshape_non_constant
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[R:.*]] = tfc.reshape %[[X]] : tensor<4xf32> -> tensor<2x2xf32>
// CHECK-NEXT:    return %[[R]]
func.func @reshape_non_constant(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  %0 = tfc.reshape %x : tensor<4xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// Tests that an identity transpose folds away.

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<2x3x4xf16>)
// CHECK-NOT:     tfc.transpose
// CHECK:         return %[[X]]
func.func @transpose_identity(%x: tensor<2x3x4xf16>) -> tensor<2x3x4xf16> {
  %0 = tfc.transpose %x perm = [0, 1, 2] : tensor<2x3x4xf16> -> tensor<2x3x4xf16>
  return %0 : tensor<2x3x4xf16>
}

// -----

// Tests that a transpose that is not the identity stays, even when it
// preserves the type (equal dimensions).

// CHECK-LABEL: func.func @transpose_no_fold
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<3x3xf32>)
// CHECK-NEXT:    %[[T:.*]] = tfc.transpose %[[X]] perm = [1, 0] : tensor<3x3xf32> -> tensor<3x3xf32>
// CHECK-NEXT:    return %[[T]]
func.func @transpose_no_fold(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = tfc.transpose %x perm = [1, 0] : tensor<3x3xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// Tests that transpose(transpose(x)) composes into one transpose of x.

// CHECK-LABEL: func.func @transpose_chain
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[T:.*]] = tfc.transpose %[[X]] perm = [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
// CHECK-NEXT:    return %[[T]]
func.func @transpose_chain(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %0 = tfc.transpose %x perm = [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = tfc.transpose %0 perm = [0, 2, 1] : tensor<3x2x4xf32> -> tensor<3x4x2xf32>
  return %1 : tensor<3x4x2xf32>
}

// -----

// Tests that a transpose chain that composes to the identity vanishes.

// CHECK-LABEL: func.func @transpose_chain_identity
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<2x3x4x5xi32>)
// CHECK-NOT:     tfc.transpose
// CHECK:         return %[[X]]
func.func @transpose_chain_identity(%x: tensor<2x3x4x5xi32>) -> tensor<2x3x4x5xi32> {
  %0 = tfc.transpose %x perm = [0, 2, 1, 3] : tensor<2x3x4x5xi32> -> tensor<2x4x3x5xi32>
  %1 = tfc.transpose %0 perm = [0, 2, 1, 3] : tensor<2x4x3x5xi32> -> tensor<2x3x4x5xi32>
  return %1 : tensor<2x3x4x5xi32>
}

// -----

// Tests that a transpose of a non-transpose operand is not rewritten.

// CHECK-LABEL: func.func @transpose_chain_no_fold
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[E:.*]] = tfc.exp %[[X]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[T:.*]] = tfc.transpose %[[E]] perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    return %[[T]]
func.func @transpose_chain_no_fold(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = tfc.exp %x : tensor<2x3xf32>
  %1 = tfc.transpose %0 perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}

// -----

// Tests that a concat of a single input folds to that input, and one of two
// inputs stays.

// CHECK-LABEL: func.func @concat
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[C:.*]] = tfc.concat %[[X]], %[[X]] dim = 1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    return %[[X]], %[[C]]
func.func @concat(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x6xf32>) {
  %0 = tfc.concat %x dim = 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = tfc.concat %x, %x dim = 1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x6xf32>
}

// -----

// Tests that a slice covering the whole operand folds away (a stride over a
// size-1 dimension still takes everything).

// CHECK-LABEL: func.func @slice_full
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<1x8xbf16>)
// CHECK-NOT:     tfc.slice
// CHECK:         return %[[X]], %[[X]]
func.func @slice_full(%x: tensor<1x8xbf16>) -> (tensor<1x8xbf16>, tensor<1x8xbf16>) {
  %0 = tfc.slice %x start = [0, 0] limit = [1, 8] stride = [1, 1] : tensor<1x8xbf16> -> tensor<1x8xbf16>
  %1 = tfc.slice %x start = [0, 0] limit = [1, 8] stride = [4, 1] : tensor<1x8xbf16> -> tensor<1x8xbf16>
  return %0, %1 : tensor<1x8xbf16>, tensor<1x8xbf16>
}

// -----

// Tests that a proper sub-window (an offset, a shorter limit or a stride)
// does not fold.

// CHECK-LABEL: func.func @slice_no_fold
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[S0:.*]] = tfc.slice %[[X]] start = [1, 0] limit = [4, 8] stride = [1, 1]
// CHECK-NEXT:    %[[S1:.*]] = tfc.slice %[[X]] start = [0, 0] limit = [4, 7] stride = [1, 1]
// CHECK-NEXT:    %[[S2:.*]] = tfc.slice %[[X]] start = [0, 0] limit = [4, 8] stride = [1, 2]
// CHECK-NEXT:    return %[[S0]], %[[S1]], %[[S2]]
func.func @slice_no_fold(%x: tensor<4x8xf32>) -> (tensor<3x8xf32>, tensor<4x7xf32>, tensor<4x4xf32>) {
  %0 = tfc.slice %x start = [1, 0] limit = [4, 8] stride = [1, 1] : tensor<4x8xf32> -> tensor<3x8xf32>
  %1 = tfc.slice %x start = [0, 0] limit = [4, 7] stride = [1, 1] : tensor<4x8xf32> -> tensor<4x7xf32>
  %2 = tfc.slice %x start = [0, 0] limit = [4, 8] stride = [1, 2] : tensor<4x8xf32> -> tensor<4x4xf32>
  return %0, %1, %2 : tensor<3x8xf32>, tensor<4x7xf32>, tensor<4x4xf32>
}

// -----

// Tests that a broadcast_to its operand's own type folds away.

// CHECK-LABEL: func.func @broadcast_to_same_type
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x8xi64>)
// CHECK-NOT:     tfc.broadcast_to
// CHECK:         return %[[X]]
func.func @broadcast_to_same_type(%x: tensor<4x8xi64>) -> tensor<4x8xi64> {
  %0 = tfc.broadcast_to %x : tensor<4x8xi64> -> tensor<4x8xi64>
  return %0 : tensor<4x8xi64>
}

// -----

// Tests that broadcast_to of a splat constant becomes a splat constant of the
// result shape.

// CHECK-LABEL: func.func @broadcast_to_splat
// CHECK-DAG:     %[[C0:.*]] = tfc.constant dense<5.000000e-01> : tensor<4x8xf32>
// CHECK-DAG:     %[[C1:.*]] = tfc.constant dense<3> : tensor<2x3xi32>
// CHECK-NOT:     tfc.broadcast_to
// CHECK:         return %[[C0]], %[[C1]]
func.func @broadcast_to_splat() -> (tensor<4x8xf32>, tensor<2x3xi32>) {
  %c = tfc.constant dense<0.5> : tensor<8xf32>
  %0 = tfc.broadcast_to %c : tensor<8xf32> -> tensor<4x8xf32>
  %s = tfc.constant dense<3> : tensor<i32>
  %1 = tfc.broadcast_to %s : tensor<i32> -> tensor<2x3xi32>
  return %0, %1 : tensor<4x8xf32>, tensor<2x3xi32>
}

// -----

// Tests that broadcast_to of a non-splat constant, or of a non-constant,
// stays.

// CHECK-LABEL: func.func @broadcast_to_no_fold
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<2xf32>)
// CHECK-NEXT:    %[[C:.*]] = tfc.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[B0:.*]] = tfc.broadcast_to %[[C]] : tensor<2xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    %[[B1:.*]] = tfc.broadcast_to %[[X]] : tensor<2xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    return %[[B0]], %[[B1]]
func.func @broadcast_to_no_fold(%x: tensor<2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %c = tfc.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = tfc.broadcast_to %c : tensor<2xf32> -> tensor<3x2xf32>
  %1 = tfc.broadcast_to %x : tensor<2xf32> -> tensor<3x2xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// Tests that tfc.constant folds (it is ConstantLike): equal constants are
// merged, unused ones are erased, different ones are kept.

// CHECK-LABEL: func.func @constant
// CHECK-DAG:     %[[A:.*]] = tfc.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-DAG:     %[[B:.*]] = tfc.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-DAG:     %[[I:.*]] = tfc.constant dense<1> : tensor<4xi32>
// CHECK-NOT:     tfc.constant
// CHECK:         return %[[A]], %[[A]], %[[B]], %[[I]]
func.func @constant() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %0 = tfc.constant dense<1.0> : tensor<4xf32>
  %1 = tfc.constant dense<1.0> : tensor<4xf32>
  %2 = tfc.constant dense<2.0> : tensor<4xf32>
  %3 = tfc.constant dense<1> : tensor<4xi32>
  %unused = tfc.constant dense<9.0> : tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}

// -----

// Tests that folds compose: reshape(transpose(transpose(reshape(x)))) with
// inverse transposes and inverse reshapes reduces to x.

// CHECK-LABEL: func.func @compose
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<2x6xf32>)
// CHECK-NEXT:    return %[[X]]
func.func @compose(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %0 = tfc.reshape %x : tensor<2x6xf32> -> tensor<2x2x3xf32>
  %1 = tfc.transpose %0 perm = [0, 2, 1] : tensor<2x2x3xf32> -> tensor<2x3x2xf32>
  %2 = tfc.transpose %1 perm = [0, 2, 1] : tensor<2x3x2xf32> -> tensor<2x2x3xf32>
  %3 = tfc.reshape %2 : tensor<2x2x3xf32> -> tensor<2x6xf32>
  %4 = tfc.neg %3 : tensor<2x6xf32>
  %5 = tfc.neg %4 : tensor<2x6xf32>
  return %5 : tensor<2x6xf32>
}

// -----

// Tests that a store survives canonicalization, while an unused load (it only
// reads) and an unused pure op are erased.

// CHECK-LABEL: func.func @effects
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4xf32>)
// CHECK-NOT:     tfc.load
// CHECK-NOT:     tfc.exp
// CHECK:         tfc.store %[[X]], @s : tensor<4xf32>
// CHECK-NEXT:    return
module {
  tfc.state @s : tensor<4xf32> = "zeros"
  func.func @effects(%x: tensor<4xf32>) {
    %0 = tfc.load @s : tensor<4xf32>
    %1 = tfc.exp %x : tensor<4xf32>
    tfc.store %x, @s : tensor<4xf32>
    return
  }
}

// -----

// Tests that a constant operand of a commutative op (add, mul, max, min) moves
// to the right-hand side, where broadcasting gives the same result, and that
// a non-commutative op (sub) keeps its operand order.

// CHECK-LABEL: func.func @commutative
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<2x4xf32>)
// CHECK-NEXT:    %[[C:.*]] = tfc.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %[[A:.*]] = tfc.add %[[X]], %[[C]] : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[M:.*]] = tfc.mul %[[X]], %[[C]] : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[S:.*]] = tfc.sub %[[C]], %[[X]] : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    return %[[A]], %[[M]], %[[S]]
func.func @commutative(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %c = tfc.constant dense<1.0> : tensor<4xf32>
  %0 = tfc.add %c, %x : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %1 = tfc.mul %c, %x : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %2 = tfc.sub %c, %x : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %0, %1, %2 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
