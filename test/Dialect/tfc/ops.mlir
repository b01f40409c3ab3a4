// RUN: tfc-opt %s -split-input-file | tfc-opt -split-input-file | FileCheck %s
// RUN: tfc-opt %s -split-input-file --mlir-print-op-generic | tfc-opt -split-input-file | FileCheck %s
// RUN: tfc-opt %s -split-input-file --mlir-print-op-generic | tfc-opt -split-input-file --mlir-print-op-generic | tfc-opt -split-input-file | FileCheck %s

// Round trip of every tfc op in its custom form, and through the generic form
// back to the custom form. Every element type an op accepts appears at least
// once.

// Tests that parameters and states round-trip with every initializer kind,
// the frozen flag, quoted (dotted) names and every element type.

// CHECK:      tfc.param @h.0.attn.c_attn.weight : tensor<8x24xf32> = "normal(0.0, 0.02)"{{$}}
// CHECK-NEXT: tfc.param @tok_emb : tensor<12x32xbf16> = "orthogonal(1.0)" frozen{{$}}
// CHECK-NEXT: tfc.param @ln.bias : tensor<8xf16> = "zeros"{{$}}
// CHECK-NEXT: tfc.param @ln.weight : tensor<8xf32> = "ones"{{$}}
// CHECK-NEXT: tfc.param @u : tensor<4x4xf32> = "uniform(-0.1, 0.1)"{{$}}
// CHECK-NEXT: tfc.param @ci : tensor<4xi32> = "constant(3)"{{$}}
// CHECK-NEXT: tfc.param @ci64 : tensor<2x2xi64> = "ones" frozen{{$}}
// CHECK-NEXT: tfc.state @kv.0.k : tensor<1x2x16x4xf32> = "zeros"{{$}}
// CHECK-NEXT: tfc.state @step : tensor<i64> = "constant(0)"{{$}}
// CHECK-NEXT: tfc.state @m : tensor<8xbf16> = "normal(0, 1)"{{$}}
// CHECK-NEXT: tfc.state @pos : tensor<i32> = "zeros"{{$}}
// CHECK-LABEL: func.func @params_and_state
module {
  tfc.param @"h.0.attn.c_attn.weight" : tensor<8x24xf32> = "normal(0.0, 0.02)"
  tfc.param @"tok_emb" : tensor<12x32xbf16> = "orthogonal(1.0)" frozen
  tfc.param @"ln.bias" : tensor<8xf16> = "zeros"
  tfc.param @"ln.weight" : tensor<8xf32> = "ones"
  tfc.param @u : tensor<4x4xf32> = "uniform(-0.1, 0.1)"
  tfc.param @ci : tensor<4xi32> = "constant(3)"
  tfc.param @ci64 : tensor<2x2xi64> = "ones" frozen
  tfc.state @"kv.0.k" : tensor<1x2x16x4xf32> = "zeros"
  tfc.state @step : tensor<i64> = "constant(0)"
  tfc.state @m : tensor<8xbf16> = "normal(0, 1)"
  tfc.state @pos : tensor<i32> = "zeros"
  func.func @params_and_state() {
    return
  }
}

// -----

// Tests that tfc.load reads params and states and tfc.store writes states and
// non-frozen params, for every element type (0-d included).

// CHECK-LABEL: func.func @load_store
// CHECK-SAME:    (%[[K:arg[0-9]+]]: tensor<1x2x16x4xf32>, %[[W:arg[0-9]+]]: tensor<8x24xf32>)
// CHECK-NEXT:    %[[LW:.*]] = tfc.load @h.0.weight : tensor<8x24xf32>
// CHECK-NEXT:    %[[LB:.*]] = tfc.load @bias : tensor<24xbf16>
// CHECK-NEXT:    %[[LK:.*]] = tfc.load @kv.0.k : tensor<1x2x16x4xf32>
// CHECK-NEXT:    %[[LS:.*]] = tfc.load @step : tensor<i64>
// CHECK-NEXT:    %[[LI:.*]] = tfc.load @ids : tensor<3xi32>
// CHECK-NEXT:    %[[LH:.*]] = tfc.load @half : tensor<2xf16>
// CHECK-NEXT:    %[[LM:.*]] = tfc.load @m : tensor<4xbf16>
// CHECK-NEXT:    tfc.store %[[K]], @kv.0.k : tensor<1x2x16x4xf32>
// CHECK-NEXT:    tfc.store %[[W]], @h.0.weight : tensor<8x24xf32>
// CHECK-NEXT:    tfc.store %[[LS]], @step : tensor<i64>
// CHECK-NEXT:    tfc.store %[[LI]], @ids : tensor<3xi32>
// CHECK-NEXT:    tfc.store %[[LH]], @half : tensor<2xf16>
// CHECK-NEXT:    tfc.store %[[LM]], @m : tensor<4xbf16>
// CHECK-NEXT:    return %[[LW]], %[[LB]], %[[LK]], %[[LI]], %[[LH]]
module {
  tfc.param @"h.0.weight" : tensor<8x24xf32> = "normal(0.0, 0.02)"
  tfc.param @bias : tensor<24xbf16> = "zeros" frozen
  tfc.state @"kv.0.k" : tensor<1x2x16x4xf32> = "zeros"
  tfc.state @step : tensor<i64> = "zeros"
  tfc.state @ids : tensor<3xi32> = "zeros"
  tfc.state @half : tensor<2xf16> = "ones"
  tfc.state @m : tensor<4xbf16> = "normal(0.0, 1.0)"
  func.func @load_store(%k: tensor<1x2x16x4xf32>, %w: tensor<8x24xf32>)
      -> (tensor<8x24xf32>, tensor<24xbf16>, tensor<1x2x16x4xf32>, tensor<3xi32>, tensor<2xf16>) {
    %0 = tfc.load @"h.0.weight" : tensor<8x24xf32>
    %1 = tfc.load @bias : tensor<24xbf16>
    %2 = tfc.load @"kv.0.k" : tensor<1x2x16x4xf32>
    %3 = tfc.load @step : tensor<i64>
    %4 = tfc.load @ids : tensor<3xi32>
    %5 = tfc.load @half : tensor<2xf16>
    %6 = tfc.load @m : tensor<4xbf16>
    tfc.store %k, @"kv.0.k" : tensor<1x2x16x4xf32>
    tfc.store %w, @"h.0.weight" : tensor<8x24xf32>
    tfc.store %3, @step : tensor<i64>
    tfc.store %4, @ids : tensor<3xi32>
    tfc.store %5, @half : tensor<2xf16>
    tfc.store %6, @m : tensor<4xbf16>
    return %0, %1, %2, %4, %5 : tensor<8x24xf32>, tensor<24xbf16>, tensor<1x2x16x4xf32>, tensor<3xi32>, tensor<2xf16>
  }
}

// -----

// Tests that tfc.constant round-trips dense and splat values of every element
// type, 0-d included; its result type is inferred from the value.

// CHECK-LABEL: func.func @constant
// CHECK-NEXT:    tfc.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    tfc.constant dense<5.000000e-01> : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf16>
// CHECK-NEXT:    tfc.constant dense<[1, -2, 3]> : tensor<3xi32>
// CHECK-NEXT:    tfc.constant dense<-100> : tensor<4xi64>
// CHECK-NEXT:    tfc.constant dense<7> : tensor<i32>
// CHECK-NEXT:    tfc.constant dense<2.500000e-01> : tensor<f32>
func.func @constant() {
  %0 = tfc.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = tfc.constant dense<0.5> : tensor<2x3xbf16>
  %2 = tfc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf16>
  %3 = tfc.constant dense<[1, -2, 3]> : tensor<3xi32>
  %4 = tfc.constant dense<-100> : tensor<4xi64>
  %5 = tfc.constant dense<7> : tensor<i32>
  %6 = tfc.constant dense<0.25> : tensor<f32>
  return
}

// -----

// Tests that tfc.iota round-trips for every element type and dimension.

// CHECK-LABEL: func.func @iota
// CHECK-NEXT:    tfc.iota dim = 1 : tensor<1x64xi32>
// CHECK-NEXT:    tfc.iota dim = 0 : tensor<8xi64>
// CHECK-NEXT:    tfc.iota dim = 2 : tensor<2x3x4xf32>
// CHECK-NEXT:    tfc.iota dim = 0 : tensor<4x2xbf16>
// CHECK-NEXT:    tfc.iota dim = 1 : tensor<4x2xf16>
func.func @iota() {
  %0 = tfc.iota dim = 1 : tensor<1x64xi32>
  %1 = tfc.iota dim = 0 : tensor<8xi64>
  %2 = tfc.iota dim = 2 : tensor<2x3x4xf32>
  %3 = tfc.iota dim = 0 : tensor<4x2xbf16>
  %4 = tfc.iota dim = 1 : tensor<4x2xf16>
  return
}

// -----

// Tests that every binary elementwise op round-trips with NumPy broadcasting
// (trailing alignment, size-1 dimensions, a 0-d operand) on f32.

// CHECK-LABEL: func.func @binary_f32
// CHECK-SAME:    (%[[A:arg[0-9]+]]: tensor<4x1x8xf32>, %[[B:arg[0-9]+]]: tensor<3x1xf32>, %[[S:arg[0-9]+]]: tensor<f32>)
// CHECK-NEXT:    tfc.add %[[A]], %[[B]] : tensor<4x1x8xf32>, tensor<3x1xf32> -> tensor<4x3x8xf32>
// CHECK-NEXT:    tfc.sub %[[B]], %[[A]] : tensor<3x1xf32>, tensor<4x1x8xf32> -> tensor<4x3x8xf32>
// CHECK-NEXT:    tfc.mul %[[A]], %[[S]] : tensor<4x1x8xf32>, tensor<f32> -> tensor<4x1x8xf32>
// CHECK-NEXT:    tfc.div %[[S]], %[[A]] : tensor<f32>, tensor<4x1x8xf32> -> tensor<4x1x8xf32>
// CHECK-NEXT:    tfc.max %[[A]], %[[A]] : tensor<4x1x8xf32>, tensor<4x1x8xf32> -> tensor<4x1x8xf32>
// CHECK-NEXT:    tfc.min %[[B]], %[[B]] : tensor<3x1xf32>, tensor<3x1xf32> -> tensor<3x1xf32>
// CHECK-NEXT:    tfc.pow %[[A]], %[[B]] : tensor<4x1x8xf32>, tensor<3x1xf32> -> tensor<4x3x8xf32>
func.func @binary_f32(%a: tensor<4x1x8xf32>, %b: tensor<3x1xf32>, %s: tensor<f32>) {
  %0 = tfc.add %a, %b : tensor<4x1x8xf32>, tensor<3x1xf32> -> tensor<4x3x8xf32>
  %1 = tfc.sub %b, %a : tensor<3x1xf32>, tensor<4x1x8xf32> -> tensor<4x3x8xf32>
  %2 = tfc.mul %a, %s : tensor<4x1x8xf32>, tensor<f32> -> tensor<4x1x8xf32>
  %3 = tfc.div %s, %a : tensor<f32>, tensor<4x1x8xf32> -> tensor<4x1x8xf32>
  %4 = tfc.max %a, %a : tensor<4x1x8xf32>, tensor<4x1x8xf32> -> tensor<4x1x8xf32>
  %5 = tfc.min %b, %b : tensor<3x1xf32>, tensor<3x1xf32> -> tensor<3x1xf32>
  %6 = tfc.pow %a, %b : tensor<4x1x8xf32>, tensor<3x1xf32> -> tensor<4x3x8xf32>
  return
}

// -----

// Tests that the binary elementwise ops accept bf16, f16, i32 and i64, and
// that pow accepts bf16 and f16.

// CHECK-LABEL: func.func @binary_other_types
// CHECK-SAME:    (%[[BF:arg[0-9]+]]: tensor<2x8xbf16>, %[[H:arg[0-9]+]]: tensor<8xf16>, %[[I:arg[0-9]+]]: tensor<2x8xi32>, %[[L:arg[0-9]+]]: tensor<8xi64>)
// CHECK-NEXT:    tfc.add %[[BF]], %[[BF]] : tensor<2x8xbf16>, tensor<2x8xbf16> -> tensor<2x8xbf16>
// CHECK-NEXT:    tfc.sub %[[H]], %[[H]] : tensor<8xf16>, tensor<8xf16> -> tensor<8xf16>
// CHECK-NEXT:    tfc.mul %[[I]], %[[I]] : tensor<2x8xi32>, tensor<2x8xi32> -> tensor<2x8xi32>
// CHECK-NEXT:    tfc.div %[[L]], %[[L]] : tensor<8xi64>, tensor<8xi64> -> tensor<8xi64>
// CHECK-NEXT:    tfc.max %[[I]], %[[I]] : tensor<2x8xi32>, tensor<2x8xi32> -> tensor<2x8xi32>
// CHECK-NEXT:    tfc.min %[[L]], %[[L]] : tensor<8xi64>, tensor<8xi64> -> tensor<8xi64>
// CHECK-NEXT:    tfc.pow %[[BF]], %[[BF]] : tensor<2x8xbf16>, tensor<2x8xbf16> -> tensor<2x8xbf16>
// CHECK-NEXT:    tfc.pow %[[H]], %[[H]] : tensor<8xf16>, tensor<8xf16> -> tensor<8xf16>
func.func @binary_other_types(%bf: tensor<2x8xbf16>, %h: tensor<8xf16>, %i: tensor<2x8xi32>, %l: tensor<8xi64>) {
  %0 = tfc.add %bf, %bf : tensor<2x8xbf16>, tensor<2x8xbf16> -> tensor<2x8xbf16>
  %1 = tfc.sub %h, %h : tensor<8xf16>, tensor<8xf16> -> tensor<8xf16>
  %2 = tfc.mul %i, %i : tensor<2x8xi32>, tensor<2x8xi32> -> tensor<2x8xi32>
  %3 = tfc.div %l, %l : tensor<8xi64>, tensor<8xi64> -> tensor<8xi64>
  %4 = tfc.max %i, %i : tensor<2x8xi32>, tensor<2x8xi32> -> tensor<2x8xi32>
  %5 = tfc.min %l, %l : tensor<8xi64>, tensor<8xi64> -> tensor<8xi64>
  %6 = tfc.pow %bf, %bf : tensor<2x8xbf16>, tensor<2x8xbf16> -> tensor<2x8xbf16>
  %7 = tfc.pow %h, %h : tensor<8xf16>, tensor<8xf16> -> tensor<8xf16>
  return
}

// -----

// Tests that every elementwise op accepts every element type it allows: the
// binary ops and neg/abs all five, pow and the other unary ops the floats.

// CHECK-LABEL: func.func @elementwise_all_types
// CHECK-SAME:    (%[[F:arg[0-9]+]]: tensor<2x3xf32>, %[[B:arg[0-9]+]]: tensor<2x3xbf16>, %[[H:arg[0-9]+]]: tensor<2x3xf16>, %[[I:arg[0-9]+]]: tensor<2x3xi32>, %[[L:arg[0-9]+]]: tensor<2x3xi64>)
// CHECK-NEXT:    tfc.add %[[F]], %[[F]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    tfc.add %[[B]], %[[B]] : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
// CHECK-NEXT:    tfc.add %[[H]], %[[H]] : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT:    tfc.add %[[I]], %[[I]] : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
// CHECK-NEXT:    tfc.add %[[L]], %[[L]] : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
// CHECK-NEXT:    tfc.sub %[[F]], %[[F]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    tfc.sub %[[B]], %[[B]] : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
// CHECK-NEXT:    tfc.sub %[[H]], %[[H]] : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT:    tfc.sub %[[I]], %[[I]] : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
// CHECK-NEXT:    tfc.sub %[[L]], %[[L]] : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
// CHECK-NEXT:    tfc.mul %[[F]], %[[F]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    tfc.mul %[[B]], %[[B]] : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
// CHECK-NEXT:    tfc.mul %[[H]], %[[H]] : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT:    tfc.mul %[[I]], %[[I]] : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
// CHECK-NEXT:    tfc.mul %[[L]], %[[L]] : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
// CHECK-NEXT:    tfc.div %[[F]], %[[F]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    tfc.div %[[B]], %[[B]] : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
// CHECK-NEXT:    tfc.div %[[H]], %[[H]] : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT:    tfc.div %[[I]], %[[I]] : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
// CHECK-NEXT:    tfc.div %[[L]], %[[L]] : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
// CHECK-NEXT:    tfc.max %[[F]], %[[F]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    tfc.max %[[B]], %[[B]] : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
// CHECK-NEXT:    tfc.max %[[H]], %[[H]] : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT:    tfc.max %[[I]], %[[I]] : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
// CHECK-NEXT:    tfc.max %[[L]], %[[L]] : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
// CHECK-NEXT:    tfc.min %[[F]], %[[F]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    tfc.min %[[B]], %[[B]] : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
// CHECK-NEXT:    tfc.min %[[H]], %[[H]] : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT:    tfc.min %[[I]], %[[I]] : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
// CHECK-NEXT:    tfc.min %[[L]], %[[L]] : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
// CHECK-NEXT:    tfc.pow %[[F]], %[[F]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    tfc.pow %[[B]], %[[B]] : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
// CHECK-NEXT:    tfc.pow %[[H]], %[[H]] : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT:    tfc.exp %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.exp %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.exp %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.log %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.log %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.log %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.sqrt %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.sqrt %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.sqrt %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.rsqrt %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.rsqrt %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.rsqrt %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.tanh %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.tanh %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.tanh %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.sin %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.sin %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.sin %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.cos %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.cos %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.cos %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.sigmoid %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.sigmoid %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.sigmoid %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.relu %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.relu %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.relu %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.silu %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.silu %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.silu %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.neg %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.neg %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.neg %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.neg %[[I]] : tensor<2x3xi32>
// CHECK-NEXT:    tfc.neg %[[L]] : tensor<2x3xi64>
// CHECK-NEXT:    tfc.abs %[[F]] : tensor<2x3xf32>
// CHECK-NEXT:    tfc.abs %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    tfc.abs %[[H]] : tensor<2x3xf16>
// CHECK-NEXT:    tfc.abs %[[I]] : tensor<2x3xi32>
// CHECK-NEXT:    tfc.abs %[[L]] : tensor<2x3xi64>
func.func @elementwise_all_types(%f: tensor<2x3xf32>, %b: tensor<2x3xbf16>, %h: tensor<2x3xf16>, %i: tensor<2x3xi32>, %l: tensor<2x3xi64>) {
  %0 = tfc.add %f, %f : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = tfc.add %b, %b : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  %2 = tfc.add %h, %h : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
  %3 = tfc.add %i, %i : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  %4 = tfc.add %l, %l : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
  %5 = tfc.sub %f, %f : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %6 = tfc.sub %b, %b : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  %7 = tfc.sub %h, %h : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
  %8 = tfc.sub %i, %i : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  %9 = tfc.sub %l, %l : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
  %10 = tfc.mul %f, %f : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %11 = tfc.mul %b, %b : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  %12 = tfc.mul %h, %h : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
  %13 = tfc.mul %i, %i : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  %14 = tfc.mul %l, %l : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
  %15 = tfc.div %f, %f : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %16 = tfc.div %b, %b : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  %17 = tfc.div %h, %h : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
  %18 = tfc.div %i, %i : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  %19 = tfc.div %l, %l : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
  %20 = tfc.max %f, %f : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %21 = tfc.max %b, %b : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  %22 = tfc.max %h, %h : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
  %23 = tfc.max %i, %i : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  %24 = tfc.max %l, %l : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
  %25 = tfc.min %f, %f : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %26 = tfc.min %b, %b : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  %27 = tfc.min %h, %h : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
  %28 = tfc.min %i, %i : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  %29 = tfc.min %l, %l : tensor<2x3xi64>, tensor<2x3xi64> -> tensor<2x3xi64>
  %30 = tfc.pow %f, %f : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %31 = tfc.pow %b, %b : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  %32 = tfc.pow %h, %h : tensor<2x3xf16>, tensor<2x3xf16> -> tensor<2x3xf16>
  %33 = tfc.exp %f : tensor<2x3xf32>
  %34 = tfc.exp %b : tensor<2x3xbf16>
  %35 = tfc.exp %h : tensor<2x3xf16>
  %36 = tfc.log %f : tensor<2x3xf32>
  %37 = tfc.log %b : tensor<2x3xbf16>
  %38 = tfc.log %h : tensor<2x3xf16>
  %39 = tfc.sqrt %f : tensor<2x3xf32>
  %40 = tfc.sqrt %b : tensor<2x3xbf16>
  %41 = tfc.sqrt %h : tensor<2x3xf16>
  %42 = tfc.rsqrt %f : tensor<2x3xf32>
  %43 = tfc.rsqrt %b : tensor<2x3xbf16>
  %44 = tfc.rsqrt %h : tensor<2x3xf16>
  %45 = tfc.tanh %f : tensor<2x3xf32>
  %46 = tfc.tanh %b : tensor<2x3xbf16>
  %47 = tfc.tanh %h : tensor<2x3xf16>
  %48 = tfc.sin %f : tensor<2x3xf32>
  %49 = tfc.sin %b : tensor<2x3xbf16>
  %50 = tfc.sin %h : tensor<2x3xf16>
  %51 = tfc.cos %f : tensor<2x3xf32>
  %52 = tfc.cos %b : tensor<2x3xbf16>
  %53 = tfc.cos %h : tensor<2x3xf16>
  %54 = tfc.sigmoid %f : tensor<2x3xf32>
  %55 = tfc.sigmoid %b : tensor<2x3xbf16>
  %56 = tfc.sigmoid %h : tensor<2x3xf16>
  %57 = tfc.relu %f : tensor<2x3xf32>
  %58 = tfc.relu %b : tensor<2x3xbf16>
  %59 = tfc.relu %h : tensor<2x3xf16>
  %60 = tfc.silu %f : tensor<2x3xf32>
  %61 = tfc.silu %b : tensor<2x3xbf16>
  %62 = tfc.silu %h : tensor<2x3xf16>
  %63 = tfc.neg %f : tensor<2x3xf32>
  %64 = tfc.neg %b : tensor<2x3xbf16>
  %65 = tfc.neg %h : tensor<2x3xf16>
  %66 = tfc.neg %i : tensor<2x3xi32>
  %67 = tfc.neg %l : tensor<2x3xi64>
  %68 = tfc.abs %f : tensor<2x3xf32>
  %69 = tfc.abs %b : tensor<2x3xbf16>
  %70 = tfc.abs %h : tensor<2x3xf16>
  %71 = tfc.abs %i : tensor<2x3xi32>
  %72 = tfc.abs %l : tensor<2x3xi64>
  return
}

// -----

// Tests that the float-only unary ops round-trip on f32, bf16 and f16.

// CHECK-LABEL: func.func @unary_float
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x8xf32>, %[[B:arg[0-9]+]]: tensor<8xbf16>, %[[H:arg[0-9]+]]: tensor<2x2x2xf16>)
// CHECK-NEXT:    tfc.exp %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    tfc.log %[[B]] : tensor<8xbf16>
// CHECK-NEXT:    tfc.sqrt %[[H]] : tensor<2x2x2xf16>
// CHECK-NEXT:    tfc.rsqrt %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    tfc.tanh %[[B]] : tensor<8xbf16>
// CHECK-NEXT:    tfc.sin %[[H]] : tensor<2x2x2xf16>
// CHECK-NEXT:    tfc.cos %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    tfc.sigmoid %[[B]] : tensor<8xbf16>
// CHECK-NEXT:    tfc.relu %[[H]] : tensor<2x2x2xf16>
// CHECK-NEXT:    tfc.silu %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    tfc.exp %[[H]] : tensor<2x2x2xf16>
// CHECK-NEXT:    tfc.silu %[[B]] : tensor<8xbf16>
func.func @unary_float(%x: tensor<4x8xf32>, %b: tensor<8xbf16>, %h: tensor<2x2x2xf16>) {
  %0 = tfc.exp %x : tensor<4x8xf32>
  %1 = tfc.log %b : tensor<8xbf16>
  %2 = tfc.sqrt %h : tensor<2x2x2xf16>
  %3 = tfc.rsqrt %x : tensor<4x8xf32>
  %4 = tfc.tanh %b : tensor<8xbf16>
  %5 = tfc.sin %h : tensor<2x2x2xf16>
  %6 = tfc.cos %x : tensor<4x8xf32>
  %7 = tfc.sigmoid %b : tensor<8xbf16>
  %8 = tfc.relu %h : tensor<2x2x2xf16>
  %9 = tfc.silu %x : tensor<4x8xf32>
  %10 = tfc.exp %h : tensor<2x2x2xf16>
  %11 = tfc.silu %b : tensor<8xbf16>
  return
}

// -----

// Tests that neg and abs accept floats and signed integers (i32, i64), 0-d
// included.

// CHECK-LABEL: func.func @neg_abs
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4xf32>, %[[I:arg[0-9]+]]: tensor<2x3xi32>, %[[L:arg[0-9]+]]: tensor<i64>, %[[B:arg[0-9]+]]: tensor<3xbf16>, %[[H:arg[0-9]+]]: tensor<3xf16>)
// CHECK-NEXT:    tfc.neg %[[X]] : tensor<4xf32>
// CHECK-NEXT:    tfc.neg %[[I]] : tensor<2x3xi32>
// CHECK-NEXT:    tfc.neg %[[L]] : tensor<i64>
// CHECK-NEXT:    tfc.neg %[[B]] : tensor<3xbf16>
// CHECK-NEXT:    tfc.abs %[[H]] : tensor<3xf16>
// CHECK-NEXT:    tfc.abs %[[I]] : tensor<2x3xi32>
// CHECK-NEXT:    tfc.abs %[[L]] : tensor<i64>
// CHECK-NEXT:    tfc.abs %[[X]] : tensor<4xf32>
func.func @neg_abs(%x: tensor<4xf32>, %i: tensor<2x3xi32>, %l: tensor<i64>, %b: tensor<3xbf16>, %h: tensor<3xf16>) {
  %0 = tfc.neg %x : tensor<4xf32>
  %1 = tfc.neg %i : tensor<2x3xi32>
  %2 = tfc.neg %l : tensor<i64>
  %3 = tfc.neg %b : tensor<3xbf16>
  %4 = tfc.abs %h : tensor<3xf16>
  %5 = tfc.abs %i : tensor<2x3xi32>
  %6 = tfc.abs %l : tensor<i64>
  %7 = tfc.abs %x : tensor<4xf32>
  return
}

// -----

// Tests that gelu round-trips with both approximations and leaky_relu with
// its alpha, on f32, bf16 and f16.

// CHECK-LABEL: func.func @gelu_leaky_relu
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x64x32xf32>, %[[B:arg[0-9]+]]: tensor<8xbf16>, %[[H:arg[0-9]+]]: tensor<8xf16>)
// CHECK-NEXT:    tfc.gelu %[[X]] approximate = tanh : tensor<4x64x32xf32>
// CHECK-NEXT:    tfc.gelu %[[X]] approximate = none : tensor<4x64x32xf32>
// CHECK-NEXT:    tfc.gelu %[[B]] approximate = tanh : tensor<8xbf16>
// CHECK-NEXT:    tfc.gelu %[[H]] approximate = none : tensor<8xf16>
// CHECK-NEXT:    tfc.leaky_relu %[[X]] alpha = 1.000000e-01 : tensor<4x64x32xf32>
// CHECK-NEXT:    tfc.leaky_relu %[[B]] alpha = 2.000000e-01 : tensor<8xbf16>
// CHECK-NEXT:    tfc.leaky_relu %[[H]] alpha = 0.000000e+00 : tensor<8xf16>
func.func @gelu_leaky_relu(%x: tensor<4x64x32xf32>, %b: tensor<8xbf16>, %h: tensor<8xf16>) {
  %0 = tfc.gelu %x approximate = tanh : tensor<4x64x32xf32>
  %1 = tfc.gelu %x approximate = none : tensor<4x64x32xf32>
  %2 = tfc.gelu %b approximate = tanh : tensor<8xbf16>
  %3 = tfc.gelu %h approximate = none : tensor<8xf16>
  %4 = tfc.leaky_relu %x alpha = 0.1 : tensor<4x64x32xf32>
  %5 = tfc.leaky_relu %b alpha = 2.000000e-01 : tensor<8xbf16>
  %6 = tfc.leaky_relu %h alpha = 0.0 : tensor<8xf16>
  return
}

// -----

// Tests that cast converts between every pair of element kinds (float to
// float, int to float, float to int, int to int) and allows the identity.

// CHECK-LABEL: func.func @cast
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x8xf32>, %[[I:arg[0-9]+]]: tensor<4x8xi32>, %[[L:arg[0-9]+]]: tensor<i64>)
// CHECK-NEXT:    %[[BF:.*]] = tfc.cast %[[X]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT:    tfc.cast %[[BF]] : tensor<4x8xbf16> -> tensor<4x8xf16>
// CHECK-NEXT:    tfc.cast %[[I]] : tensor<4x8xi32> -> tensor<4x8xf32>
// CHECK-NEXT:    tfc.cast %[[X]] : tensor<4x8xf32> -> tensor<4x8xi64>
// CHECK-NEXT:    tfc.cast %[[L]] : tensor<i64> -> tensor<i32>
// CHECK-NEXT:    tfc.cast %[[X]] : tensor<4x8xf32> -> tensor<4x8xf32>
func.func @cast(%x: tensor<4x8xf32>, %i: tensor<4x8xi32>, %l: tensor<i64>) {
  %0 = tfc.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  %1 = tfc.cast %0 : tensor<4x8xbf16> -> tensor<4x8xf16>
  %2 = tfc.cast %i : tensor<4x8xi32> -> tensor<4x8xf32>
  %3 = tfc.cast %x : tensor<4x8xf32> -> tensor<4x8xi64>
  %4 = tfc.cast %l : tensor<i64> -> tensor<i32>
  %5 = tfc.cast %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Tests that dropout round-trips with its 0-d i64 seed on every float type,
// with rate 0 allowed.

// CHECK-LABEL: func.func @dropout
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x64x32xf32>, %[[B:arg[0-9]+]]: tensor<8xbf16>, %[[H:arg[0-9]+]]: tensor<8xf16>, %[[S:arg[0-9]+]]: tensor<i64>)
// CHECK-NEXT:    tfc.dropout %[[X]], %[[S]] rate = 1.000000e-01 : tensor<4x64x32xf32>, tensor<i64> -> tensor<4x64x32xf32>
// CHECK-NEXT:    tfc.dropout %[[B]], %[[S]] rate = 5.000000e-01 : tensor<8xbf16>, tensor<i64> -> tensor<8xbf16>
// CHECK-NEXT:    tfc.dropout %[[H]], %[[S]] rate = 0.000000e+00 : tensor<8xf16>, tensor<i64> -> tensor<8xf16>
func.func @dropout(%x: tensor<4x64x32xf32>, %b: tensor<8xbf16>, %h: tensor<8xf16>, %seed: tensor<i64>) {
  %0 = tfc.dropout %x, %seed rate = 0.1 : tensor<4x64x32xf32>, tensor<i64> -> tensor<4x64x32xf32>
  %1 = tfc.dropout %b, %seed rate = 0.5 : tensor<8xbf16>, tensor<i64> -> tensor<8xbf16>
  %2 = tfc.dropout %h, %seed rate = 0.0 : tensor<8xf16>, tensor<i64> -> tensor<8xf16>
  return
}

// -----

// Tests that matmul round-trips without transposes, with each transpose and
// with both, on 2-d operands.

// CHECK-LABEL: func.func @matmul_transposes
// CHECK-SAME:    (%[[A:arg[0-9]+]]: tensor<3x5xf32>, %[[B:arg[0-9]+]]: tensor<5x7xf32>, %[[AT:arg[0-9]+]]: tensor<5x3xf32>, %[[BT:arg[0-9]+]]: tensor<7x5xf32>)
// CHECK-NEXT:    tfc.matmul %[[A]], %[[B]] : tensor<3x5xf32>, tensor<5x7xf32> -> tensor<3x7xf32>
// CHECK-NEXT:    tfc.matmul %[[AT]], %[[B]] transpose_lhs : tensor<5x3xf32>, tensor<5x7xf32> -> tensor<3x7xf32>
// CHECK-NEXT:    tfc.matmul %[[A]], %[[BT]] transpose_rhs : tensor<3x5xf32>, tensor<7x5xf32> -> tensor<3x7xf32>
// CHECK-NEXT:    tfc.matmul %[[AT]], %[[BT]] transpose_lhs transpose_rhs : tensor<5x3xf32>, tensor<7x5xf32> -> tensor<3x7xf32>
func.func @matmul_transposes(%a: tensor<3x5xf32>, %b: tensor<5x7xf32>, %at: tensor<5x3xf32>, %bt: tensor<7x5xf32>) {
  %0 = tfc.matmul %a, %b : tensor<3x5xf32>, tensor<5x7xf32> -> tensor<3x7xf32>
  %1 = tfc.matmul %at, %b transpose_lhs : tensor<5x3xf32>, tensor<5x7xf32> -> tensor<3x7xf32>
  %2 = tfc.matmul %a, %bt transpose_rhs : tensor<3x5xf32>, tensor<7x5xf32> -> tensor<3x7xf32>
  %3 = tfc.matmul %at, %bt transpose_lhs transpose_rhs : tensor<5x3xf32>, tensor<7x5xf32> -> tensor<3x7xf32>
  return
}

// -----

// Tests that matmul broadcasts batch dimensions (different ranks, size-1
// batch dimensions) and accepts bf16, f16, i32 and i64.

// CHECK-LABEL: func.func @matmul_batch
// CHECK-SAME:    (%[[Q:arg[0-9]+]]: tensor<4x12x64x16xbf16>, %[[K:arg[0-9]+]]: tensor<1x12x64x16xbf16>, %[[X:arg[0-9]+]]: tensor<2x1x3x5xf16>, %[[W:arg[0-9]+]]: tensor<5x7xf16>, %[[I:arg[0-9]+]]: tensor<6x2x3xi32>, %[[J:arg[0-9]+]]: tensor<3x4xi32>, %[[L:arg[0-9]+]]: tensor<2x2xi64>)
// CHECK-NEXT:    tfc.matmul %[[Q]], %[[K]] transpose_rhs : tensor<4x12x64x16xbf16>, tensor<1x12x64x16xbf16> -> tensor<4x12x64x64xbf16>
// CHECK-NEXT:    tfc.matmul %[[X]], %[[W]] : tensor<2x1x3x5xf16>, tensor<5x7xf16> -> tensor<2x1x3x7xf16>
// CHECK-NEXT:    tfc.matmul %[[J]], %[[I]] transpose_lhs transpose_rhs : tensor<3x4xi32>, tensor<6x2x3xi32> -> tensor<6x4x2xi32>
// CHECK-NEXT:    tfc.matmul %[[L]], %[[L]] : tensor<2x2xi64>, tensor<2x2xi64> -> tensor<2x2xi64>
func.func @matmul_batch(%q: tensor<4x12x64x16xbf16>, %k: tensor<1x12x64x16xbf16>,
                        %x: tensor<2x1x3x5xf16>, %w: tensor<5x7xf16>,
                        %i: tensor<6x2x3xi32>, %j: tensor<3x4xi32>, %l: tensor<2x2xi64>) {
  %0 = tfc.matmul %q, %k transpose_rhs : tensor<4x12x64x16xbf16>, tensor<1x12x64x16xbf16> -> tensor<4x12x64x64xbf16>
  %1 = tfc.matmul %x, %w : tensor<2x1x3x5xf16>, tensor<5x7xf16> -> tensor<2x1x3x7xf16>
  %2 = tfc.matmul %j, %i transpose_lhs transpose_rhs : tensor<3x4xi32>, tensor<6x2x3xi32> -> tensor<6x4x2xi32>
  %3 = tfc.matmul %l, %l : tensor<2x2xi64>, tensor<2x2xi64> -> tensor<2x2xi64>
  return
}

// -----

// Tests that linear round-trips with and without bias, with transpose_weight,
// with both, on a 1-d input and on every float type.

// CHECK-LABEL: func.func @linear
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x64x8xf32>, %[[W:arg[0-9]+]]: tensor<8x24xf32>, %[[B:arg[0-9]+]]: tensor<24xf32>, %[[WT:arg[0-9]+]]: tensor<24x8xf32>, %[[XB:arg[0-9]+]]: tensor<8xbf16>, %[[WB:arg[0-9]+]]: tensor<8x2xbf16>, %[[XH:arg[0-9]+]]: tensor<3x8xf16>, %[[WH:arg[0-9]+]]: tensor<2x8xf16>, %[[BH:arg[0-9]+]]: tensor<2xf16>)
// CHECK-NEXT:    tfc.linear %[[X]], %[[W]] bias %[[B]] : (tensor<4x64x8xf32>, tensor<8x24xf32>, tensor<24xf32>) -> tensor<4x64x24xf32>
// CHECK-NEXT:    tfc.linear %[[X]], %[[W]] : (tensor<4x64x8xf32>, tensor<8x24xf32>) -> tensor<4x64x24xf32>
// CHECK-NEXT:    tfc.linear %[[X]], %[[WT]] transpose_weight : (tensor<4x64x8xf32>, tensor<24x8xf32>) -> tensor<4x64x24xf32>
// CHECK-NEXT:    tfc.linear %[[X]], %[[WT]] bias %[[B]] transpose_weight : (tensor<4x64x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<4x64x24xf32>
// CHECK-NEXT:    tfc.linear %[[XB]], %[[WB]] : (tensor<8xbf16>, tensor<8x2xbf16>) -> tensor<2xbf16>
// CHECK-NEXT:    tfc.linear %[[XH]], %[[WH]] bias %[[BH]] transpose_weight : (tensor<3x8xf16>, tensor<2x8xf16>, tensor<2xf16>) -> tensor<3x2xf16>
func.func @linear(%x: tensor<4x64x8xf32>, %w: tensor<8x24xf32>, %b: tensor<24xf32>, %wt: tensor<24x8xf32>,
                  %xb: tensor<8xbf16>, %wb: tensor<8x2xbf16>,
                  %xh: tensor<3x8xf16>, %wh: tensor<2x8xf16>, %bh: tensor<2xf16>) {
  %0 = tfc.linear %x, %w bias %b : (tensor<4x64x8xf32>, tensor<8x24xf32>, tensor<24xf32>) -> tensor<4x64x24xf32>
  %1 = tfc.linear %x, %w : (tensor<4x64x8xf32>, tensor<8x24xf32>) -> tensor<4x64x24xf32>
  %2 = tfc.linear %x, %wt transpose_weight : (tensor<4x64x8xf32>, tensor<24x8xf32>) -> tensor<4x64x24xf32>
  %3 = tfc.linear %x, %wt bias %b transpose_weight : (tensor<4x64x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<4x64x24xf32>
  %4 = tfc.linear %xb, %wb : (tensor<8xbf16>, tensor<8x2xbf16>) -> tensor<2xbf16>
  %5 = tfc.linear %xh, %wh bias %bh transpose_weight : (tensor<3x8xf16>, tensor<2x8xf16>, tensor<2xf16>) -> tensor<3x2xf16>
  return
}

// -----

// Tests that layer_norm round-trips with weight and bias, weight only, bias
// only and neither (the operand segments survive the generic form).

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x64x8xf32>, %[[G:arg[0-9]+]]: tensor<8xf32>, %[[B:arg[0-9]+]]: tensor<8xf32>, %[[XB:arg[0-9]+]]: tensor<2x8xbf16>, %[[GB:arg[0-9]+]]: tensor<8xbf16>, %[[XH:arg[0-9]+]]: tensor<8xf16>)
// CHECK-NEXT:    tfc.layer_norm %[[X]] weight %[[G]] bias %[[B]] eps = 9.99999974E-6 : (tensor<4x64x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x64x8xf32>
// CHECK-NEXT:    tfc.layer_norm %[[X]] weight %[[G]] eps = 9.99999974E-6 : (tensor<4x64x8xf32>, tensor<8xf32>) -> tensor<4x64x8xf32>
// CHECK-NEXT:    tfc.layer_norm %[[X]] bias %[[B]] eps = 9.99999974E-6 : (tensor<4x64x8xf32>, tensor<8xf32>) -> tensor<4x64x8xf32>
// CHECK-NEXT:    tfc.layer_norm %[[X]] eps = 0.000000e+00 : (tensor<4x64x8xf32>) -> tensor<4x64x8xf32>
// CHECK-NEXT:    tfc.layer_norm %[[XB]] weight %[[GB]] bias %[[GB]] eps = 9.99999974E-6 : (tensor<2x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<2x8xbf16>
// CHECK-NEXT:    tfc.layer_norm %[[XH]] eps = 1.000000e-03 : (tensor<8xf16>) -> tensor<8xf16>
func.func @layer_norm(%x: tensor<4x64x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                      %xb: tensor<2x8xbf16>, %gb: tensor<8xbf16>, %xh: tensor<8xf16>) {
  %0 = tfc.layer_norm %x weight %g bias %b eps = 1.0e-5 : (tensor<4x64x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x64x8xf32>
  %1 = tfc.layer_norm %x weight %g eps = 1.0e-5 : (tensor<4x64x8xf32>, tensor<8xf32>) -> tensor<4x64x8xf32>
  %2 = tfc.layer_norm %x bias %b eps = 1.0e-5 : (tensor<4x64x8xf32>, tensor<8xf32>) -> tensor<4x64x8xf32>
  %3 = tfc.layer_norm %x eps = 0.0 : (tensor<4x64x8xf32>) -> tensor<4x64x8xf32>
  %4 = tfc.layer_norm %xb weight %gb bias %gb eps = 1.0e-5 : (tensor<2x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<2x8xbf16>
  %5 = tfc.layer_norm %xh eps = 1.0e-3 : (tensor<8xf16>) -> tensor<8xf16>
  return
}

// -----

// Tests that rms_norm round-trips with and without weight on every float
// type.

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<1x8x64xf32>, %[[G:arg[0-9]+]]: tensor<64xf32>, %[[XB:arg[0-9]+]]: tensor<3x4xbf16>, %[[XH:arg[0-9]+]]: tensor<4xf16>, %[[GH:arg[0-9]+]]: tensor<4xf16>)
// CHECK-NEXT:    tfc.rms_norm %[[X]] weight %[[G]] eps = 9.99999997E-7 : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
// CHECK-NEXT:    tfc.rms_norm %[[X]] eps = 9.99999993E-9 : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
// CHECK-NEXT:    tfc.rms_norm %[[XB]] eps = 9.99999997E-7 : (tensor<3x4xbf16>) -> tensor<3x4xbf16>
// CHECK-NEXT:    tfc.rms_norm %[[XH]] weight %[[GH]] eps = 9.99999997E-7 : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
func.func @rms_norm(%x: tensor<1x8x64xf32>, %g: tensor<64xf32>, %xb: tensor<3x4xbf16>, %xh: tensor<4xf16>, %gh: tensor<4xf16>) {
  %0 = tfc.rms_norm %x weight %g eps = 1.0e-6 : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
  %1 = tfc.rms_norm %x eps = 1.0e-8 : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
  %2 = tfc.rms_norm %xb eps = 1.0e-6 : (tensor<3x4xbf16>) -> tensor<3x4xbf16>
  %3 = tfc.rms_norm %xh weight %gh eps = 1.0e-6 : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

// Tests that softmax and log_softmax round-trip with negative and positive
// dims on every float type.

// CHECK-LABEL: func.func @softmax
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x12x64x64xf32>, %[[B:arg[0-9]+]]: tensor<2x8xbf16>, %[[H:arg[0-9]+]]: tensor<8xf16>)
// CHECK-NEXT:    tfc.softmax %[[X]] dim = -1 : tensor<4x12x64x64xf32> -> tensor<4x12x64x64xf32>
// CHECK-NEXT:    tfc.softmax %[[B]] dim = 0 : tensor<2x8xbf16> -> tensor<2x8xbf16>
// CHECK-NEXT:    tfc.softmax %[[H]] dim = -1 : tensor<8xf16> -> tensor<8xf16>
// CHECK-NEXT:    tfc.log_softmax %[[X]] dim = 3 : tensor<4x12x64x64xf32> -> tensor<4x12x64x64xf32>
// CHECK-NEXT:    tfc.log_softmax %[[B]] dim = -2 : tensor<2x8xbf16> -> tensor<2x8xbf16>
// CHECK-NEXT:    tfc.log_softmax %[[H]] dim = 0 : tensor<8xf16> -> tensor<8xf16>
func.func @softmax(%x: tensor<4x12x64x64xf32>, %b: tensor<2x8xbf16>, %h: tensor<8xf16>) {
  %0 = tfc.softmax %x dim = -1 : tensor<4x12x64x64xf32> -> tensor<4x12x64x64xf32>
  %1 = tfc.softmax %b dim = 0 : tensor<2x8xbf16> -> tensor<2x8xbf16>
  %2 = tfc.softmax %h dim = -1 : tensor<8xf16> -> tensor<8xf16>
  %3 = tfc.log_softmax %x dim = 3 : tensor<4x12x64x64xf32> -> tensor<4x12x64x64xf32>
  %4 = tfc.log_softmax %b dim = -2 : tensor<2x8xbf16> -> tensor<2x8xbf16>
  %5 = tfc.log_softmax %h dim = 0 : tensor<8xf16> -> tensor<8xf16>
  return
}

// -----

// Tests that attention round-trips plain, causal, with an explicit offset,
// with a scale, with all three, and as cross-attention (Tq != Tk, Dv != D).

// CHECK-LABEL: func.func @attention
// CHECK-SAME:    (%[[Q:arg[0-9]+]]: tensor<2x4x8x16xf32>, %[[K:arg[0-9]+]]: tensor<2x4x8x16xf32>, %[[V:arg[0-9]+]]: tensor<2x4x8x16xf32>, %[[Q1:arg[0-9]+]]: tensor<2x4x1x16xf32>, %[[KC:arg[0-9]+]]: tensor<2x4x32x16xf32>, %[[VC:arg[0-9]+]]: tensor<2x4x32x8xf32>, %[[POS:arg[0-9]+]]: tensor<i32>)
// CHECK-NEXT:    tfc.attention %[[Q]], %[[K]], %[[V]] : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NEXT:    tfc.attention %[[Q]], %[[K]], %[[V]] causal : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NEXT:    tfc.attention %[[Q1]], %[[KC]], %[[VC]] offset %[[POS]] causal : (tensor<2x4x1x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x8xf32>, tensor<i32>) -> tensor<2x4x1x8xf32>
// CHECK-NEXT:    tfc.attention %[[Q]], %[[K]], %[[V]] scale = 1.250000e-01 : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NEXT:    tfc.attention %[[Q]], %[[KC]], %[[VC]] offset %[[POS]] causal scale = 5.000000e-01 : (tensor<2x4x8x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x8xf32>, tensor<i32>) -> tensor<2x4x8x8xf32>
// CHECK-NEXT:    tfc.attention %[[Q]], %[[KC]], %[[VC]] : (tensor<2x4x8x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x8xf32>) -> tensor<2x4x8x8xf32>
func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                     %q1: tensor<2x4x1x16xf32>, %kc: tensor<2x4x32x16xf32>, %vc: tensor<2x4x32x8xf32>,
                     %pos: tensor<i32>) {
  %0 = tfc.attention %q, %k, %v : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %1 = tfc.attention %q, %k, %v causal : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %2 = tfc.attention %q1, %kc, %vc offset %pos causal : (tensor<2x4x1x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x8xf32>, tensor<i32>) -> tensor<2x4x1x8xf32>
  %3 = tfc.attention %q, %k, %v scale = 0.125 : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %4 = tfc.attention %q, %kc, %vc offset %pos causal scale = 0.5 : (tensor<2x4x8x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x8xf32>, tensor<i32>) -> tensor<2x4x8x8xf32>
  %5 = tfc.attention %q, %kc, %vc : (tensor<2x4x8x16xf32>, tensor<2x4x32x16xf32>, tensor<2x4x32x8xf32>) -> tensor<2x4x8x8xf32>
  return
}

// -----

// Tests that attention accepts grouped-query (and multi-query) key/value
// heads, and bf16 and f16 operands.

// CHECK-LABEL: func.func @attention_gqa
// CHECK-SAME:    (%[[Q:arg[0-9]+]]: tensor<1x8x4x16xbf16>, %[[K:arg[0-9]+]]: tensor<1x2x4x16xbf16>, %[[V:arg[0-9]+]]: tensor<1x2x4x16xbf16>, %[[QH:arg[0-9]+]]: tensor<1x8x1x4xf16>, %[[KH:arg[0-9]+]]: tensor<1x1x6x4xf16>)
// CHECK-NEXT:    tfc.attention %[[Q]], %[[K]], %[[V]] causal : (tensor<1x8x4x16xbf16>, tensor<1x2x4x16xbf16>, tensor<1x2x4x16xbf16>) -> tensor<1x8x4x16xbf16>
// CHECK-NEXT:    tfc.attention %[[QH]], %[[KH]], %[[KH]] causal : (tensor<1x8x1x4xf16>, tensor<1x1x6x4xf16>, tensor<1x1x6x4xf16>) -> tensor<1x8x1x4xf16>
func.func @attention_gqa(%q: tensor<1x8x4x16xbf16>, %k: tensor<1x2x4x16xbf16>, %v: tensor<1x2x4x16xbf16>,
                         %qh: tensor<1x8x1x4xf16>, %kh: tensor<1x1x6x4xf16>) {
  %0 = tfc.attention %q, %k, %v causal : (tensor<1x8x4x16xbf16>, tensor<1x2x4x16xbf16>, tensor<1x2x4x16xbf16>) -> tensor<1x8x4x16xbf16>
  %1 = tfc.attention %qh, %kh, %kh causal : (tensor<1x8x1x4xf16>, tensor<1x1x6x4xf16>, tensor<1x1x6x4xf16>) -> tensor<1x8x1x4xf16>
  return
}

// -----

// Tests that rotary round-trips with and without an offset on every float
// type.

// CHECK-LABEL: func.func @rotary
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<1x8x1x16xf32>, %[[POS:arg[0-9]+]]: tensor<i32>, %[[B:arg[0-9]+]]: tensor<2x4x8x2xbf16>, %[[H:arg[0-9]+]]: tensor<1x1x3x4xf16>)
// CHECK-NEXT:    tfc.rotary %[[X]] offset %[[POS]] theta = 1.000000e+04 : (tensor<1x8x1x16xf32>, tensor<i32>) -> tensor<1x8x1x16xf32>
// CHECK-NEXT:    tfc.rotary %[[X]] theta = 5.000000e+05 : (tensor<1x8x1x16xf32>) -> tensor<1x8x1x16xf32>
// CHECK-NEXT:    tfc.rotary %[[B]] theta = 1.000000e+04 : (tensor<2x4x8x2xbf16>) -> tensor<2x4x8x2xbf16>
// CHECK-NEXT:    tfc.rotary %[[H]] offset %[[POS]] theta = 1.000000e+04 : (tensor<1x1x3x4xf16>, tensor<i32>) -> tensor<1x1x3x4xf16>
func.func @rotary(%x: tensor<1x8x1x16xf32>, %pos: tensor<i32>, %b: tensor<2x4x8x2xbf16>, %h: tensor<1x1x3x4xf16>) {
  %0 = tfc.rotary %x offset %pos theta = 10000.0 : (tensor<1x8x1x16xf32>, tensor<i32>) -> tensor<1x8x1x16xf32>
  %1 = tfc.rotary %x theta = 500000.0 : (tensor<1x8x1x16xf32>) -> tensor<1x8x1x16xf32>
  %2 = tfc.rotary %b theta = 1.0e4 : (tensor<2x4x8x2xbf16>) -> tensor<2x4x8x2xbf16>
  %3 = tfc.rotary %h offset %pos theta = 1.0e4 : (tensor<1x1x3x4xf16>, tensor<i32>) -> tensor<1x1x3x4xf16>
  return
}

// -----

// Tests that embedding round-trips with i32 and i64 ids of any rank (0-d
// included) and with every float table type.

// CHECK-LABEL: func.func @embedding
// CHECK-SAME:    (%[[T:arg[0-9]+]]: tensor<50x8xf32>, %[[I:arg[0-9]+]]: tensor<4x64xi32>, %[[L:arg[0-9]+]]: tensor<3xi64>, %[[TB:arg[0-9]+]]: tensor<50x8xbf16>, %[[TH:arg[0-9]+]]: tensor<50x8xf16>, %[[S:arg[0-9]+]]: tensor<i32>)
// CHECK-NEXT:    tfc.embedding %[[T]], %[[I]] : tensor<50x8xf32>, tensor<4x64xi32> -> tensor<4x64x8xf32>
// CHECK-NEXT:    tfc.embedding %[[TB]], %[[L]] : tensor<50x8xbf16>, tensor<3xi64> -> tensor<3x8xbf16>
// CHECK-NEXT:    tfc.embedding %[[TH]], %[[S]] : tensor<50x8xf16>, tensor<i32> -> tensor<8xf16>
func.func @embedding(%t: tensor<50x8xf32>, %i: tensor<4x64xi32>, %l: tensor<3xi64>,
                     %tb: tensor<50x8xbf16>, %th: tensor<50x8xf16>, %s: tensor<i32>) {
  %0 = tfc.embedding %t, %i : tensor<50x8xf32>, tensor<4x64xi32> -> tensor<4x64x8xf32>
  %1 = tfc.embedding %tb, %l : tensor<50x8xbf16>, tensor<3xi64> -> tensor<3x8xbf16>
  %2 = tfc.embedding %th, %s : tensor<50x8xf16>, tensor<i32> -> tensor<8xf16>
  return
}

// -----

// Tests that reshape and transpose round-trip on every element type, 0-d
// reshapes included.

// CHECK-LABEL: func.func @reshape_transpose
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x64x32xf32>, %[[I:arg[0-9]+]]: tensor<6xi32>, %[[S:arg[0-9]+]]: tensor<i64>, %[[B:arg[0-9]+]]: tensor<2x3xbf16>, %[[H:arg[0-9]+]]: tensor<2x3x4xf16>)
// CHECK-NEXT:    %[[R:.*]] = tfc.reshape %[[X]] : tensor<4x64x32xf32> -> tensor<4x64x4x8xf32>
// CHECK-NEXT:    tfc.reshape %[[I]] : tensor<6xi32> -> tensor<2x3xi32>
// CHECK-NEXT:    tfc.reshape %[[S]] : tensor<i64> -> tensor<1x1xi64>
// CHECK-NEXT:    tfc.reshape %[[B]] : tensor<2x3xbf16> -> tensor<6xbf16>
// CHECK-NEXT:    tfc.reshape %[[H]] : tensor<2x3x4xf16> -> tensor<6x4xf16>
// CHECK-NEXT:    tfc.transpose %[[R]] perm = [0, 2, 1, 3] : tensor<4x64x4x8xf32> -> tensor<4x4x64x8xf32>
// CHECK-NEXT:    tfc.transpose %[[H]] perm = [2, 0, 1] : tensor<2x3x4xf16> -> tensor<4x2x3xf16>
// CHECK-NEXT:    tfc.transpose %[[B]] perm = [1, 0] : tensor<2x3xbf16> -> tensor<3x2xbf16>
// CHECK-NEXT:    tfc.transpose %[[I]] perm = [0] : tensor<6xi32> -> tensor<6xi32>
// CHECK-NEXT:    tfc.transpose %[[S]] perm = [] : tensor<i64> -> tensor<i64>
func.func @reshape_transpose(%x: tensor<4x64x32xf32>, %i: tensor<6xi32>, %s: tensor<i64>, %b: tensor<2x3xbf16>, %h: tensor<2x3x4xf16>) {
  %0 = tfc.reshape %x : tensor<4x64x32xf32> -> tensor<4x64x4x8xf32>
  %1 = tfc.reshape %i : tensor<6xi32> -> tensor<2x3xi32>
  %2 = tfc.reshape %s : tensor<i64> -> tensor<1x1xi64>
  %3 = tfc.reshape %b : tensor<2x3xbf16> -> tensor<6xbf16>
  %r = tfc.reshape %h : tensor<2x3x4xf16> -> tensor<6x4xf16>
  %4 = tfc.transpose %0 perm = [0, 2, 1, 3] : tensor<4x64x4x8xf32> -> tensor<4x4x64x8xf32>
  %5 = tfc.transpose %h perm = [2, 0, 1] : tensor<2x3x4xf16> -> tensor<4x2x3xf16>
  %6 = tfc.transpose %b perm = [1, 0] : tensor<2x3xbf16> -> tensor<3x2xbf16>
  %7 = tfc.transpose %i perm = [0] : tensor<6xi32> -> tensor<6xi32>
  %8 = tfc.transpose %s perm = [] : tensor<i64> -> tensor<i64>
  return
}

// -----

// Tests that concat round-trips with one, two and three inputs, positive and
// negative dims and every element type.

// CHECK-LABEL: func.func @concat
// CHECK-SAME:    (%[[A:arg[0-9]+]]: tensor<2x3xf32>, %[[B:arg[0-9]+]]: tensor<2x5xf32>, %[[I:arg[0-9]+]]: tensor<1x4xi32>, %[[L:arg[0-9]+]]: tensor<3xi64>, %[[BF:arg[0-9]+]]: tensor<2x2xbf16>, %[[H:arg[0-9]+]]: tensor<1x2xf16>)
// CHECK-NEXT:    tfc.concat %[[A]], %[[B]] dim = 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    tfc.concat %[[I]], %[[I]], %[[I]] dim = 0 : (tensor<1x4xi32>, tensor<1x4xi32>, tensor<1x4xi32>) -> tensor<3x4xi32>
// CHECK-NEXT:    tfc.concat %[[L]], %[[L]] dim = -1 : (tensor<3xi64>, tensor<3xi64>) -> tensor<6xi64>
// CHECK-NEXT:    tfc.concat %[[BF]] dim = 0 : (tensor<2x2xbf16>) -> tensor<2x2xbf16>
// CHECK-NEXT:    tfc.concat %[[H]], %[[H]] dim = -2 : (tensor<1x2xf16>, tensor<1x2xf16>) -> tensor<2x2xf16>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %i: tensor<1x4xi32>, %l: tensor<3xi64>, %bf: tensor<2x2xbf16>, %h: tensor<1x2xf16>) {
  %0 = tfc.concat %a, %b dim = 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %1 = tfc.concat %i, %i, %i dim = 0 : (tensor<1x4xi32>, tensor<1x4xi32>, tensor<1x4xi32>) -> tensor<3x4xi32>
  %2 = tfc.concat %l, %l dim = -1 : (tensor<3xi64>, tensor<3xi64>) -> tensor<6xi64>
  %3 = tfc.concat %bf dim = 0 : (tensor<2x2xbf16>) -> tensor<2x2xbf16>
  %4 = tfc.concat %h, %h dim = -2 : (tensor<1x2xf16>, tensor<1x2xf16>) -> tensor<2x2xf16>
  return
}

// -----

// Tests that slice round-trips with unit and larger strides (the result
// length rounds up) on every element type.

// CHECK-LABEL: func.func @slice
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x64x24xf32>, %[[I:arg[0-9]+]]: tensor<10xi32>, %[[L:arg[0-9]+]]: tensor<3x3xi64>, %[[B:arg[0-9]+]]: tensor<8xbf16>, %[[H:arg[0-9]+]]: tensor<8xf16>)
// CHECK-NEXT:    tfc.slice %[[X]] start = [0, 0, 8] limit = [4, 64, 16] stride = [1, 1, 1] : tensor<4x64x24xf32> -> tensor<4x64x8xf32>
// CHECK-NEXT:    tfc.slice %[[I]] start = [1] limit = [10] stride = [3] : tensor<10xi32> -> tensor<3xi32>
// CHECK-NEXT:    tfc.slice %[[L]] start = [0, 2] limit = [3, 3] stride = [2, 1] : tensor<3x3xi64> -> tensor<2x1xi64>
// CHECK-NEXT:    tfc.slice %[[B]] start = [0] limit = [8] stride = [1] : tensor<8xbf16> -> tensor<8xbf16>
// CHECK-NEXT:    tfc.slice %[[H]] start = [7] limit = [8] stride = [5] : tensor<8xf16> -> tensor<1xf16>
func.func @slice(%x: tensor<4x64x24xf32>, %i: tensor<10xi32>, %l: tensor<3x3xi64>, %b: tensor<8xbf16>, %h: tensor<8xf16>) {
  %0 = tfc.slice %x start = [0, 0, 8] limit = [4, 64, 16] stride = [1, 1, 1] : tensor<4x64x24xf32> -> tensor<4x64x8xf32>
  %1 = tfc.slice %i start = [1] limit = [10] stride = [3] : tensor<10xi32> -> tensor<3xi32>
  %2 = tfc.slice %l start = [0, 2] limit = [3, 3] stride = [2, 1] : tensor<3x3xi64> -> tensor<2x1xi64>
  %3 = tfc.slice %b start = [0] limit = [8] stride = [1] : tensor<8xbf16> -> tensor<8xbf16>
  %4 = tfc.slice %h start = [7] limit = [8] stride = [5] : tensor<8xf16> -> tensor<1xf16>
  return
}

// -----

// Tests that dynamic_slice round-trips with positive and negative dims, a
// full-length window and every element type.

// CHECK-LABEL: func.func @dynamic_slice
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<1x128x32xf32>, %[[N:arg[0-9]+]]: tensor<i32>, %[[I:arg[0-9]+]]: tensor<8x2xi64>, %[[B:arg[0-9]+]]: tensor<4xbf16>, %[[H:arg[0-9]+]]: tensor<2x6xf16>, %[[J:arg[0-9]+]]: tensor<5xi32>)
// CHECK-NEXT:    tfc.dynamic_slice %[[X]][%[[N]]] dim = 1 : (tensor<1x128x32xf32>, tensor<i32>) -> tensor<1x1x32xf32>
// CHECK-NEXT:    tfc.dynamic_slice %[[I]][%[[N]]] dim = -2 : (tensor<8x2xi64>, tensor<i32>) -> tensor<3x2xi64>
// CHECK-NEXT:    tfc.dynamic_slice %[[B]][%[[N]]] dim = 0 : (tensor<4xbf16>, tensor<i32>) -> tensor<4xbf16>
// CHECK-NEXT:    tfc.dynamic_slice %[[H]][%[[N]]] dim = -1 : (tensor<2x6xf16>, tensor<i32>) -> tensor<2x2xf16>
// CHECK-NEXT:    tfc.dynamic_slice %[[J]][%[[N]]] dim = 0 : (tensor<5xi32>, tensor<i32>) -> tensor<2xi32>
func.func @dynamic_slice(%x: tensor<1x128x32xf32>, %n: tensor<i32>, %i: tensor<8x2xi64>, %b: tensor<4xbf16>, %h: tensor<2x6xf16>, %j: tensor<5xi32>) {
  %0 = tfc.dynamic_slice %x[%n] dim = 1 : (tensor<1x128x32xf32>, tensor<i32>) -> tensor<1x1x32xf32>
  %1 = tfc.dynamic_slice %i[%n] dim = -2 : (tensor<8x2xi64>, tensor<i32>) -> tensor<3x2xi64>
  %2 = tfc.dynamic_slice %b[%n] dim = 0 : (tensor<4xbf16>, tensor<i32>) -> tensor<4xbf16>
  %3 = tfc.dynamic_slice %h[%n] dim = -1 : (tensor<2x6xf16>, tensor<i32>) -> tensor<2x2xf16>
  %4 = tfc.dynamic_slice %j[%n] dim = 0 : (tensor<5xi32>, tensor<i32>) -> tensor<2xi32>
  return
}

// -----

// Tests that broadcast_to round-trips from lower ranks, size-1 dimensions, a
// 0-d operand and the identity, on every element type.

// CHECK-LABEL: func.func @broadcast_to
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<32xf32>, %[[I:arg[0-9]+]]: tensor<3x1xi32>, %[[S:arg[0-9]+]]: tensor<i64>, %[[B:arg[0-9]+]]: tensor<1x4xbf16>, %[[H:arg[0-9]+]]: tensor<2xf16>)
// CHECK-NEXT:    tfc.broadcast_to %[[X]] : tensor<32xf32> -> tensor<4x64x32xf32>
// CHECK-NEXT:    tfc.broadcast_to %[[I]] : tensor<3x1xi32> -> tensor<2x3x5xi32>
// CHECK-NEXT:    tfc.broadcast_to %[[S]] : tensor<i64> -> tensor<7xi64>
// CHECK-NEXT:    tfc.broadcast_to %[[B]] : tensor<1x4xbf16> -> tensor<3x4xbf16>
// CHECK-NEXT:    tfc.broadcast_to %[[H]] : tensor<2xf16> -> tensor<2xf16>
func.func @broadcast_to(%x: tensor<32xf32>, %i: tensor<3x1xi32>, %s: tensor<i64>, %b: tensor<1x4xbf16>, %h: tensor<2xf16>) {
  %0 = tfc.broadcast_to %x : tensor<32xf32> -> tensor<4x64x32xf32>
  %1 = tfc.broadcast_to %i : tensor<3x1xi32> -> tensor<2x3x5xi32>
  %2 = tfc.broadcast_to %s : tensor<i64> -> tensor<7xi64>
  %3 = tfc.broadcast_to %b : tensor<1x4xbf16> -> tensor<3x4xbf16>
  %4 = tfc.broadcast_to %h : tensor<2xf16> -> tensor<2xf16>
  return
}

// -----

// Tests that reduce_sum, reduce_mean and reduce_max round-trip with and
// without keepdim, over one, several, negative and all dimensions, on every
// element type each accepts (reduce_mean: floats only).

// CHECK-LABEL: func.func @reduce
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x64x32xf32>, %[[I:arg[0-9]+]]: tensor<2x3xi32>, %[[L:arg[0-9]+]]: tensor<5xi64>, %[[B:arg[0-9]+]]: tensor<2x8xbf16>, %[[H:arg[0-9]+]]: tensor<2x8xf16>)
// CHECK-NEXT:    tfc.reduce_sum %[[X]] dims = [2] keepdim : tensor<4x64x32xf32> -> tensor<4x64x1xf32>
// CHECK-NEXT:    tfc.reduce_sum %[[X]] dims = [0, 1] : tensor<4x64x32xf32> -> tensor<32xf32>
// CHECK-NEXT:    tfc.reduce_sum %[[I]] dims = [-1] : tensor<2x3xi32> -> tensor<2xi32>
// CHECK-NEXT:    tfc.reduce_sum %[[L]] dims = [0] : tensor<5xi64> -> tensor<i64>
// CHECK-NEXT:    tfc.reduce_mean %[[X]] dims = [-1] keepdim : tensor<4x64x32xf32> -> tensor<4x64x1xf32>
// CHECK-NEXT:    tfc.reduce_mean %[[B]] dims = [1, 0] : tensor<2x8xbf16> -> tensor<bf16>
// CHECK-NEXT:    tfc.reduce_mean %[[H]] dims = [0] keepdim : tensor<2x8xf16> -> tensor<1x8xf16>
// CHECK-NEXT:    tfc.reduce_max %[[X]] dims = [1] : tensor<4x64x32xf32> -> tensor<4x32xf32>
// CHECK-NEXT:    tfc.reduce_max %[[X]] dims = [1] keepdim : tensor<4x64x32xf32> -> tensor<4x1x32xf32>
// CHECK-NEXT:    tfc.reduce_max %[[I]] dims = [0, 1] keepdim : tensor<2x3xi32> -> tensor<1x1xi32>
// CHECK-NEXT:    tfc.reduce_max %[[L]] dims = [-1] : tensor<5xi64> -> tensor<i64>
// CHECK-NEXT:    tfc.reduce_max %[[B]] dims = [1] : tensor<2x8xbf16> -> tensor<2xbf16>
// CHECK-NEXT:    tfc.reduce_sum %[[H]] dims = [1] : tensor<2x8xf16> -> tensor<2xf16>
// CHECK-NEXT:    tfc.reduce_sum %[[B]] dims = [0] keepdim : tensor<2x8xbf16> -> tensor<1x8xbf16>
// CHECK-NEXT:    tfc.reduce_max %[[H]] dims = [-2] keepdim : tensor<2x8xf16> -> tensor<1x8xf16>
func.func @reduce(%x: tensor<4x64x32xf32>, %i: tensor<2x3xi32>, %l: tensor<5xi64>, %b: tensor<2x8xbf16>, %h: tensor<2x8xf16>) {
  %0 = tfc.reduce_sum %x dims = [2] keepdim : tensor<4x64x32xf32> -> tensor<4x64x1xf32>
  %1 = tfc.reduce_sum %x dims = [0, 1] : tensor<4x64x32xf32> -> tensor<32xf32>
  %2 = tfc.reduce_sum %i dims = [-1] : tensor<2x3xi32> -> tensor<2xi32>
  %3 = tfc.reduce_sum %l dims = [0] : tensor<5xi64> -> tensor<i64>
  %4 = tfc.reduce_mean %x dims = [-1] keepdim : tensor<4x64x32xf32> -> tensor<4x64x1xf32>
  %5 = tfc.reduce_mean %b dims = [1, 0] : tensor<2x8xbf16> -> tensor<bf16>
  %6 = tfc.reduce_mean %h dims = [0] keepdim : tensor<2x8xf16> -> tensor<1x8xf16>
  %7 = tfc.reduce_max %x dims = [1] : tensor<4x64x32xf32> -> tensor<4x32xf32>
  %8 = tfc.reduce_max %x dims = [1] keepdim : tensor<4x64x32xf32> -> tensor<4x1x32xf32>
  %9 = tfc.reduce_max %i dims = [0, 1] keepdim : tensor<2x3xi32> -> tensor<1x1xi32>
  %10 = tfc.reduce_max %l dims = [-1] : tensor<5xi64> -> tensor<i64>
  %11 = tfc.reduce_max %b dims = [1] : tensor<2x8xbf16> -> tensor<2xbf16>
  %12 = tfc.reduce_sum %h dims = [1] : tensor<2x8xf16> -> tensor<2xf16>
  %13 = tfc.reduce_sum %b dims = [0] keepdim : tensor<2x8xbf16> -> tensor<1x8xbf16>
  %14 = tfc.reduce_max %h dims = [-2] keepdim : tensor<2x8xf16> -> tensor<1x8xf16>
  return
}

// -----

// Tests that argmax round-trips on every element type, with positive and
// negative dims, and always yields i32.

// CHECK-LABEL: func.func @argmax
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<1x50xf32>, %[[I:arg[0-9]+]]: tensor<3x4x5xi32>, %[[L:arg[0-9]+]]: tensor<2x2xi64>, %[[B:arg[0-9]+]]: tensor<2x8xbf16>, %[[H:arg[0-9]+]]: tensor<2x8xf16>)
// CHECK-NEXT:    tfc.argmax %[[X]] dim = -1 : tensor<1x50xf32> -> tensor<1xi32>
// CHECK-NEXT:    tfc.argmax %[[I]] dim = 1 : tensor<3x4x5xi32> -> tensor<3x5xi32>
// CHECK-NEXT:    tfc.argmax %[[L]] dim = 0 : tensor<2x2xi64> -> tensor<2xi32>
// CHECK-NEXT:    tfc.argmax %[[B]] dim = -2 : tensor<2x8xbf16> -> tensor<8xi32>
// CHECK-NEXT:    tfc.argmax %[[H]] dim = 1 : tensor<2x8xf16> -> tensor<2xi32>
func.func @argmax(%x: tensor<1x50xf32>, %i: tensor<3x4x5xi32>, %l: tensor<2x2xi64>, %b: tensor<2x8xbf16>, %h: tensor<2x8xf16>) {
  %0 = tfc.argmax %x dim = -1 : tensor<1x50xf32> -> tensor<1xi32>
  %1 = tfc.argmax %i dim = 1 : tensor<3x4x5xi32> -> tensor<3x5xi32>
  %2 = tfc.argmax %l dim = 0 : tensor<2x2xi64> -> tensor<2xi32>
  %3 = tfc.argmax %b dim = -2 : tensor<2x8xbf16> -> tensor<8xi32>
  %4 = tfc.argmax %h dim = 1 : tensor<2x8xf16> -> tensor<2xi32>
  return
}

// -----

// Tests that cross_entropy round-trips with i32 and i64 targets, the default
// and another ignore_index, and every float logits type.

// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<4x64x50xf32>, %[[T:arg[0-9]+]]: tensor<4x64xi32>, %[[XB:arg[0-9]+]]: tensor<8x50xbf16>, %[[TL:arg[0-9]+]]: tensor<8xi64>, %[[XH:arg[0-9]+]]: tensor<8x50xf16>)
// CHECK-NEXT:    tfc.cross_entropy %[[X]], %[[T]] ignore_index = -100 : tensor<4x64x50xf32>, tensor<4x64xi32> -> tensor<f32>
// CHECK-NEXT:    tfc.cross_entropy %[[XB]], %[[TL]] ignore_index = 0 : tensor<8x50xbf16>, tensor<8xi64> -> tensor<f32>
// CHECK-NEXT:    tfc.cross_entropy %[[XH]], %[[TL]] ignore_index = -1 : tensor<8x50xf16>, tensor<8xi64> -> tensor<f32>
func.func @cross_entropy(%x: tensor<4x64x50xf32>, %t: tensor<4x64xi32>, %xb: tensor<8x50xbf16>, %tl: tensor<8xi64>, %xh: tensor<8x50xf16>) {
  %0 = tfc.cross_entropy %x, %t ignore_index = -100 : tensor<4x64x50xf32>, tensor<4x64xi32> -> tensor<f32>
  %1 = tfc.cross_entropy %xb, %tl ignore_index = 0 : tensor<8x50xbf16>, tensor<8xi64> -> tensor<f32>
  %2 = tfc.cross_entropy %xh, %tl ignore_index = -1 : tensor<8x50xf16>, tensor<8xi64> -> tensor<f32>
  return
}

// -----

// Tests that sample round-trips with its four run-time scalar knobs on every
// float logits type.

// CHECK-LABEL: func.func @sample
// CHECK-SAME:    (%[[X:arg[0-9]+]]: tensor<1x50xf32>, %[[T:arg[0-9]+]]: tensor<f32>, %[[K:arg[0-9]+]]: tensor<i32>, %[[P:arg[0-9]+]]: tensor<f32>, %[[S:arg[0-9]+]]: tensor<i64>, %[[XB:arg[0-9]+]]: tensor<4x50xbf16>, %[[XH:arg[0-9]+]]: tensor<2x50xf16>)
// CHECK-NEXT:    tfc.sample %[[X]], %[[T]], %[[K]], %[[P]], %[[S]] : (tensor<1x50xf32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i64>) -> tensor<1xi32>
// CHECK-NEXT:    tfc.sample %[[XB]], %[[T]], %[[K]], %[[P]], %[[S]] : (tensor<4x50xbf16>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i64>) -> tensor<4xi32>
// CHECK-NEXT:    tfc.sample %[[XH]], %[[T]], %[[K]], %[[P]], %[[S]] : (tensor<2x50xf16>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i64>) -> tensor<2xi32>
func.func @sample(%x: tensor<1x50xf32>, %t: tensor<f32>, %k: tensor<i32>, %p: tensor<f32>, %seed: tensor<i64>,
                  %xb: tensor<4x50xbf16>, %xh: tensor<2x50xf16>) {
  %0 = tfc.sample %x, %t, %k, %p, %seed : (tensor<1x50xf32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i64>) -> tensor<1xi32>
  %1 = tfc.sample %xb, %t, %k, %p, %seed : (tensor<4x50xbf16>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i64>) -> tensor<4xi32>
  %2 = tfc.sample %xh, %t, %k, %p, %seed : (tensor<2x50xf16>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i64>) -> tensor<2xi32>
  return
}

// -----

// Tests that kv_cache_update round-trips with positive and negative dims, a
// full-length update and every element type.

// CHECK-LABEL: func.func @kv_cache_update
// CHECK-SAME:    (%[[KC:arg[0-9]+]]: tensor<1x4x32x16xf32>, %[[K:arg[0-9]+]]: tensor<1x4x1x16xf32>, %[[POS:arg[0-9]+]]: tensor<i32>, %[[BC:arg[0-9]+]]: tensor<2x8xbf16>, %[[BU:arg[0-9]+]]: tensor<2x3xbf16>, %[[H:arg[0-9]+]]: tensor<4xf16>, %[[I:arg[0-9]+]]: tensor<6x2xi32>, %[[IU:arg[0-9]+]]: tensor<2x2xi32>, %[[L:arg[0-9]+]]: tensor<3xi64>)
// CHECK-NEXT:    tfc.kv_cache_update %[[KC]], %[[K]], %[[POS]] dim = 2 : (tensor<1x4x32x16xf32>, tensor<1x4x1x16xf32>, tensor<i32>) -> tensor<1x4x32x16xf32>
// CHECK-NEXT:    tfc.kv_cache_update %[[BC]], %[[BU]], %[[POS]] dim = -1 : (tensor<2x8xbf16>, tensor<2x3xbf16>, tensor<i32>) -> tensor<2x8xbf16>
// CHECK-NEXT:    tfc.kv_cache_update %[[H]], %[[H]], %[[POS]] dim = 0 : (tensor<4xf16>, tensor<4xf16>, tensor<i32>) -> tensor<4xf16>
// CHECK-NEXT:    tfc.kv_cache_update %[[I]], %[[IU]], %[[POS]] dim = 0 : (tensor<6x2xi32>, tensor<2x2xi32>, tensor<i32>) -> tensor<6x2xi32>
// CHECK-NEXT:    tfc.kv_cache_update %[[L]], %[[L]], %[[POS]] dim = -1 : (tensor<3xi64>, tensor<3xi64>, tensor<i32>) -> tensor<3xi64>
func.func @kv_cache_update(%kc: tensor<1x4x32x16xf32>, %k: tensor<1x4x1x16xf32>, %pos: tensor<i32>,
                           %bc: tensor<2x8xbf16>, %bu: tensor<2x3xbf16>, %h: tensor<4xf16>,
                           %i: tensor<6x2xi32>, %iu: tensor<2x2xi32>, %l: tensor<3xi64>) {
  %0 = tfc.kv_cache_update %kc, %k, %pos dim = 2 : (tensor<1x4x32x16xf32>, tensor<1x4x1x16xf32>, tensor<i32>) -> tensor<1x4x32x16xf32>
  %1 = tfc.kv_cache_update %bc, %bu, %pos dim = -1 : (tensor<2x8xbf16>, tensor<2x3xbf16>, tensor<i32>) -> tensor<2x8xbf16>
  %2 = tfc.kv_cache_update %h, %h, %pos dim = 0 : (tensor<4xf16>, tensor<4xf16>, tensor<i32>) -> tensor<4xf16>
  %3 = tfc.kv_cache_update %i, %iu, %pos dim = 0 : (tensor<6x2xi32>, tensor<2x2xi32>, tensor<i32>) -> tensor<6x2xi32>
  %4 = tfc.kv_cache_update %l, %l, %pos dim = -1 : (tensor<3xi64>, tensor<3xi64>, tensor<i32>) -> tensor<3xi64>
  return
}

// -----

// Tests that the ops compose in a small GPT-style block (the order and SSA
// uses survive the round trip).

// CHECK-LABEL: func.func @block
// CHECK-SAME:    (%[[IDS:arg[0-9]+]]: tensor<2x4xi32>)
// CHECK:         %[[WTE:.*]] = tfc.load @wte : tensor<16x8xf32>
// CHECK-NEXT:    %[[E:.*]] = tfc.embedding %[[WTE]], %[[IDS]]
// CHECK-NEXT:    %[[N:.*]] = tfc.layer_norm %[[E]] eps
// CHECK-NEXT:    %[[L:.*]] = tfc.matmul %[[N]], %[[WTE]] transpose_rhs
// CHECK-NEXT:    %[[LOSS:.*]] = tfc.cross_entropy %[[L]], %[[IDS]]
// CHECK-NEXT:    return %[[LOSS]] : tensor<f32>
module {
  tfc.param @wte : tensor<16x8xf32> = "normal(0.0, 0.02)"
  func.func @block(%ids: tensor<2x4xi32>) -> tensor<f32> {
    %w = tfc.load @wte : tensor<16x8xf32>
    %e = tfc.embedding %w, %ids : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
    %n = tfc.layer_norm %e eps = 1.0e-5 : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %l = tfc.matmul %n, %w transpose_rhs : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
    %loss = tfc.cross_entropy %l, %ids ignore_index = -100 : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Tests that a fused kernel with several results round-trips.
// CHECK-LABEL: func.func @fused
// CHECK: %[[R:.*]]:2 = tfc.fused "pointwise"(%{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<2x3xf32>, %[[S:.*]]: tensor<f32>):
// CHECK: tfc.yield %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<2x3xf32>
func.func @fused(%a: tensor<2x3xf32>, %s: tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0:2 = tfc.fused "pointwise" (%a, %s) : (tensor<2x3xf32>, tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  ^bb0(%x: tensor<2x3xf32>, %y: tensor<f32>):
    %1 = tfc.mul %x, %y : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
    %2 = tfc.exp %1 : tensor<2x3xf32>
    tfc.yield %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>
  }
  return %0#0, %0#1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @moe
// CHECK: tfc.moe_route %{{.*}} top_k = 2 : tensor<8x3xf32> -> tensor<8x2xi32>
// CHECK: tfc.moe_ffn %{{.*}}, %{{.*}}, %{{.*}} experts
// CHECK: tfc.moe_ffn_grad
func.func @moe(%l: tensor<8x3xf32>, %x: tensor<8x4xf32>, %w: tensor<8x3xf32>, %a: tensor<6x4xf32>, %d: tensor<4x6xf32>) -> tensor<8x4xf32> {
  %ids = tfc.moe_route %l top_k = 2 : tensor<8x3xf32> -> tensor<8x2xi32>
  %y = tfc.moe_ffn %x, %ids, %w experts %a, %a, %d, %a, %a, %d, %a, %a, %d : (tensor<8x4xf32>, tensor<8x2xi32>, tensor<8x3xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<8x4xf32>
  %g:11 = tfc.moe_ffn_grad %x, %ids, %w, %y experts %a, %a, %d, %a, %a, %d, %a, %a, %d : (tensor<8x4xf32>, tensor<8x2xi32>, tensor<8x3xf32>, tensor<8x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>) -> (tensor<8x4xf32>, tensor<8x3xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>)
  return %y : tensor<8x4xf32>
}

// -----

// Tests that the paged KV cache's ops round-trip: kv_cache_update through a
// block table, and paged_attention (with and without a scale, a 16-bit pool).

// CHECK-LABEL: func.func @paged
// CHECK: tfc.kv_cache_update %{{.*}}, %{{.*}}, %{{.*}} blocks %{{.*}} dim = 2 : (tensor<9x2x4x8xf32>, tensor<3x2x1x8xf32>, tensor<3xi32>, tensor<3x5xi32>) -> tensor<9x2x4x8xf32>
// CHECK: tfc.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x4x1x8xf32>, tensor<9x2x4x8xf32>, tensor<9x2x4x8xf32>, tensor<3x5xi32>, tensor<3xi32>) -> tensor<3x4x1x8xf32>
// CHECK: tfc.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale = 2.500000e-01 : (tensor<3x4x2x8xf32>, tensor<9x2x4x8xbf16>, tensor<9x2x4x8xbf16>, tensor<3x5xi32>, tensor<3xi32>) -> tensor<3x4x2x8xf32>
func.func @paged(%pool: tensor<9x2x4x8xf32>, %u: tensor<3x2x1x8xf32>, %pos: tensor<3xi32>, %t: tensor<3x5xi32>,
                 %q: tensor<3x4x1x8xf32>, %q2: tensor<3x4x2x8xf32>, %b: tensor<9x2x4x8xbf16>) -> (tensor<3x4x1x8xf32>, tensor<3x4x2x8xf32>) {
  %p = tfc.kv_cache_update %pool, %u, %pos blocks %t dim = 2 : (tensor<9x2x4x8xf32>, tensor<3x2x1x8xf32>, tensor<3xi32>, tensor<3x5xi32>) -> tensor<9x2x4x8xf32>
  %o = tfc.paged_attention %q, %p, %p, %t, %pos : (tensor<3x4x1x8xf32>, tensor<9x2x4x8xf32>, tensor<9x2x4x8xf32>, tensor<3x5xi32>, tensor<3xi32>) -> tensor<3x4x1x8xf32>
  %o2 = tfc.paged_attention %q2, %b, %b, %t, %pos scale = 0.25 : (tensor<3x4x2x8xf32>, tensor<9x2x4x8xbf16>, tensor<9x2x4x8xbf16>, tensor<3x5xi32>, tensor<3xi32>) -> tensor<3x4x2x8xf32>
  return %o, %o2 : tensor<3x4x1x8xf32>, tensor<3x4x2x8xf32>
}
