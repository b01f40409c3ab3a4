// RUN: tfc-opt %s -split-input-file -verify-diagnostics

// One chunk per verifier rule of the tfc dialect. Ops whose result type is
// inferred report the precise error and then MLIR's generic "failed to infer
// returned types".

//===----------------------------------------------------------------------===//
// Type constraints shared by every op (TfcBase.td)
//===----------------------------------------------------------------------===//

// Tests that a zero-sized dimension is refused by the tensor constraint.
func.func @zero_dim(%x: tensor<0x4xf32>) {
  // expected-error @+1 {{'tfc.exp' op operand #0 must be tensor of f32/bf16/f16 with static, positive dimensions, but got 'tensor<0x4xf32>'}}
  %0 = tfc.exp %x : tensor<0x4xf32>
  return
}

// -----

// Tests that a dynamic dimension is refused by the tensor constraint.
func.func @dynamic_dim(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'tfc.neg' op operand #0 must be tensor of f32/bf16/f16/i32/i64 with static, positive dimensions, but got 'tensor<?x4xf32>'}}
  %0 = tfc.neg %x : tensor<?x4xf32>
  return
}

// -----

// Tests that an unranked tensor is refused by the tensor constraint (the
// custom form cannot even spell it; the generic form can).
func.func @unranked(%x: tensor<*xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'tfc.add' op operand #0 must be tensor of f32/bf16/f16/i32/i64 with static, positive dimensions, but got 'tensor<*xf32>'}}
  %0 = "tfc.add"(%x, %y) : (tensor<*xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that the custom form of an op refuses an unranked tensor type.
func.func @unranked_custom(%x: tensor<*xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{invalid kind of type specified}}
  %0 = tfc.add %x, %y : tensor<*xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that f64 is not a tfc element type.
func.func @f64(%x: tensor<4xf64>) {
  // expected-error @+1 {{'tfc.abs' op operand #0 must be tensor of f32/bf16/f16/i32/i64 with static, positive dimensions, but got 'tensor<4xf64>'}}
  %0 = tfc.abs %x : tensor<4xf64>
  return
}

// -----

// Tests that i8 is not a tfc element type.
func.func @i8(%x: tensor<4xi8>) {
  // expected-error @+1 {{'tfc.reshape' op operand #0 must be tensor of f32/bf16/f16/i32/i64 with static, positive dimensions, but got 'tensor<4xi8>'}}
  %0 = tfc.reshape %x : tensor<4xi8> -> tensor<2x2xi8>
  return
}

// -----

// Tests that a float-only op refuses an integer operand.
func.func @float_only(%x: tensor<4xi32>) {
  // expected-error @+1 {{'tfc.exp' op operand #0 must be tensor of f32/bf16/f16 with static, positive dimensions, but got 'tensor<4xi32>'}}
  %0 = tfc.exp %x : tensor<4xi32>
  return
}

// -----

// Tests that gelu refuses an integer operand.
func.func @gelu_int(%x: tensor<4xi64>) {
  // expected-error @+1 {{'tfc.gelu' op operand #0 must be tensor of f32/bf16/f16 with static, positive dimensions, but got 'tensor<4xi64>'}}
  %0 = tfc.gelu %x approximate = none : tensor<4xi64>
  return
}

// -----

// Tests that reduce_mean refuses an integer operand.
func.func @reduce_mean_int(%x: tensor<2x4xi32>) {
  // expected-error @+1 {{'tfc.reduce_mean' op operand #0 must be tensor of f32/bf16/f16 with static, positive dimensions, but got 'tensor<2x4xi32>'}}
  %0 = tfc.reduce_mean %x dims = [1] : tensor<2x4xi32> -> tensor<2xi32>
  return
}

// -----

// Tests that embedding ids must be integers.
func.func @embedding_float_ids(%t: tensor<10x4xf32>, %ids: tensor<3xf32>) {
  // expected-error @+1 {{'tfc.embedding' op operand #1 must be tensor of i32/i64 with static, positive dimensions, but got 'tensor<3xf32>'}}
  %0 = tfc.embedding %t, %ids : tensor<10x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
  return
}

// -----

// Tests that a run-time scalar operand must be 0-d.
func.func @seed_not_0d(%x: tensor<4xf32>, %seed: tensor<1xi64>) {
  // expected-error @+1 {{'tfc.dropout' op operand #1 must be 0-d tensor of i64, but got 'tensor<1xi64>'}}
  %0 = tfc.dropout %x, %seed rate = 0.1 : tensor<4xf32>, tensor<1xi64> -> tensor<4xf32>
  return
}

// -----

// Tests that a run-time scalar operand must have the right element type.
func.func @seed_i32(%x: tensor<4xf32>, %seed: tensor<i32>) {
  // expected-error @+1 {{'tfc.dropout' op operand #1 must be 0-d tensor of i64, but got 'tensor<i32>'}}
  %0 = tfc.dropout %x, %seed rate = 0.1 : tensor<4xf32>, tensor<i32> -> tensor<4xf32>
  return
}

// -----

// Tests that the attention offset must be a 0-d or 1-d i32.
func.func @attention_offset_2d(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>, %pos: tensor<1x1xi32>) {
  // expected-error @+1 {{'tfc.attention' op operand #3 must be 0-d or 1-d tensor of i32, but got 'tensor<1x1xi32>'}}
  %0 = tfc.attention %q, %k, %k offset %pos causal : (tensor<1x2x1x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x1xi32>) -> tensor<1x2x1x4xf32>
  return
}

// -----

// Tests that a 1-d attention offset has one position per row of the batch.
func.func @attention_offset_per_row(%q: tensor<2x2x1x4xf32>, %k: tensor<2x2x8x4xf32>, %pos: tensor<3xi32>) {
  // expected-error @+2 {{'tfc.attention' op operand 'offset' has 3 positions (one per row), but the batch is 2}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %k offset %pos causal : (tensor<2x2x1x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<3xi32>) -> tensor<2x2x1x4xf32>
  return
}

// -----

// Tests that a 1-d rotary offset has one position per row of the batch.
func.func @rotary_offset_per_row(%x: tensor<2x2x1x4xf32>, %pos: tensor<1xi32>) {
  // expected-error @+2 {{'tfc.rotary' op operand 'offset' has 1 positions (one per row), but the batch is 2}}
  // expected-error @+1 {{'tfc.rotary' op failed to infer returned types}}
  %0 = tfc.rotary %x offset %pos theta = 1.0e4 : (tensor<2x2x1x4xf32>, tensor<1xi32>) -> tensor<2x2x1x4xf32>
  return
}

// -----

// Tests that the sample knobs must be 0-d tensors of their own types.
func.func @sample_top_k_f32(%x: tensor<1x8xf32>, %t: tensor<f32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'tfc.sample' op operand #2 must be 0-d tensor of i32, but got 'tensor<f32>'}}
  %0 = tfc.sample %x, %t, %t, %t, %seed : (tensor<1x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<i64>) -> tensor<1xi32>
  return
}

// -----

// Tests that argmax's result must be i32.
func.func @argmax_i64(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'tfc.argmax' op result #0 must be tensor of i32 with static, positive dimensions, but got 'tensor<2xi64>'}}
  %0 = tfc.argmax %x dim = 1 : tensor<2x8xf32> -> tensor<2xi64>
  return
}

// -----

// Tests that a unary op's result type equals its operand type.
func.func @unary_result_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tfc.sigmoid' op requires the same type for all operands and results}}
  %0 = "tfc.sigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// Tests that a param's type must be a valid tfc tensor type.
module {
  // expected-error @+1 {{'tfc.param' op attribute 'type' failed to satisfy constraint: type attribute of tensor of f32/bf16/f16/i32/i64 with static, positive dimensions}}
  tfc.param @w : tensor<0x4xf32> = "zeros"
}

// -----

// Tests that a state's type must have a tfc element type.
module {
  // expected-error @+1 {{'tfc.state' op attribute 'type' failed to satisfy constraint: type attribute of tensor of f32/bf16/f16/i32/i64 with static, positive dimensions}}
  tfc.state @s : tensor<4xf64> = "zeros"
}

// -----

// Tests that a written result type that differs from the inferred one is
// refused.
func.func @add_result_mismatch(%a: tensor<2x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'tfc.add' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<4x4xf32>'}}
  // expected-error @+1 {{'tfc.add' op failed to infer returned types}}
  %0 = tfc.add %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<4x4xf32>
  return
}

// -----

// Tests that an inferred result element type must match too.
func.func @matmul_result_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{'tfc.matmul' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x4xbf16>'}}
  // expected-error @+1 {{'tfc.matmul' op failed to infer returned types}}
  %0 = tfc.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xbf16>
  return
}

// -----

// Tests that a generic tfc.constant's result type must be its value's type.
func.func @constant_result_mismatch() {
  // expected-error @+2 {{'tfc.constant' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'tfc.constant' op failed to infer returned types}}
  %0 = "tfc.constant"() <{value = dense<1.0> : tensor<3xf32>}> : () -> tensor<2xf32>
  return
}

// -----

// Tests that a tfc.constant's value must have a tfc element type.
func.func @constant_f64() {
  // expected-error @+1 {{'tfc.constant' op result #0 must be tensor of f32/bf16/f16/i32/i64 with static, positive dimensions, but got 'tensor<2xf64>'}}
  %0 = tfc.constant dense<1.0> : tensor<2xf64>
  return
}

// -----

// Tests that a tfc.constant cannot be empty.
func.func @constant_empty() {
  // expected-error @+1 {{'tfc.constant' op result #0 must be tensor of f32/bf16/f16/i32/i64 with static, positive dimensions, but got 'tensor<0xf32>'}}
  %0 = tfc.constant dense<> : tensor<0xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tfc.param / tfc.state initializers
//===----------------------------------------------------------------------===//

// Tests that an initializer without parentheses must be zeros or ones.
module {
  // expected-error @+1 {{'tfc.param' op initializer 'gaussian' is not one of zeros, ones, constant(v), normal(mean, std), uniform(lo, hi), orthogonal(gain)}}
  tfc.param @w : tensor<4xf32> = "gaussian"
}

// -----

// Tests that an initializer with an unclosed parenthesis is refused.
module {
  // expected-error @+1 {{'tfc.state' op initializer 'normal(0.0, 1.0' is not one of zeros, ones}}
  tfc.state @s : tensor<4xf32> = "normal(0.0, 1.0"
}

// -----

// Tests that every initializer argument must be a number.
module {
  // expected-error @+1 {{'tfc.param' op initializer 'normal(0.0, big)': argument 'big' is not a number}}
  tfc.param @w : tensor<4xf32> = "normal(0.0, big)"
}

// -----

// Tests that an empty argument list of a kind that takes arguments is refused.
module {
  // expected-error @+1 {{'tfc.param' op initializer 'constant()': argument '' is not a number}}
  tfc.param @w : tensor<4xf32> = "constant()"
}

// -----

// Tests that a NaN initializer argument is refused.
module {
  // expected-error @+1 {{'tfc.param' op initializer 'normal(0.0, nan)': argument 'nan' is not finite}}
  tfc.param @w : tensor<4xf32> = "normal(0.0, nan)"
}

// -----

// Tests that an infinite initializer argument is refused.
module {
  // expected-error @+1 {{'tfc.state' op initializer 'uniform(-inf, 1.0)': argument '-inf' is not finite}}
  tfc.state @s : tensor<4xf32> = "uniform(-inf, 1.0)"
}

// -----

// Tests that an unknown initializer kind is refused.
module {
  // expected-error @+1 {{'tfc.param' op unknown initializer 'xavier' in 'xavier(1.0)'}}
  tfc.param @w : tensor<4x4xf32> = "xavier(1.0)"
}

// -----

// Tests that an initializer must get its number of arguments.
module {
  // expected-error @+1 {{'tfc.param' op initializer 'normal' takes 2 argument(s), got 1}}
  tfc.param @w : tensor<4xf32> = "normal(0.02)"
}

// -----

// Tests that constant takes exactly one argument.
module {
  // expected-error @+1 {{'tfc.state' op initializer 'constant' takes 1 argument(s), got 2}}
  tfc.state @s : tensor<4xi32> = "constant(1, 2)"
}

// -----

// Tests that normal needs a non-negative standard deviation.
module {
  // expected-error @+1 {{'tfc.param' op normal initializer needs std >= 0, got -2.000000e-02}}
  tfc.param @w : tensor<4xf32> = "normal(0.0, -0.02)"
}

// -----

// Tests that uniform needs lo <= hi.
module {
  // expected-error @+1 {{'tfc.param' op uniform initializer needs lo <= hi, got (1.000000e+00, -1.000000e+00)}}
  tfc.param @w : tensor<4xf32> = "uniform(1.0, -1.0)"
}

// -----

// Tests that orthogonal needs a matrix or higher rank.
module {
  // expected-error @+1 {{'tfc.param' op orthogonal initializer needs a tensor of rank >= 2, got rank 1}}
  tfc.param @w : tensor<4xf32> = "orthogonal(1.0)"
}

// -----

// Tests that a random initializer needs a float tensor.
module {
  // expected-error @+1 {{'tfc.param' op random initializer 'normal' needs a float tensor, got 'i32'}}
  tfc.param @w : tensor<4xi32> = "normal(0.0, 1.0)"
}

// -----

// Tests that uniform on an integer state is refused as well.
module {
  // expected-error @+1 {{'tfc.state' op random initializer 'uniform' needs a float tensor, got 'i64'}}
  tfc.state @s : tensor<4xi64> = "uniform(0, 10)"
}

// -----

// Tests that tfc.param may only appear directly in a module.
func.func @param_in_func() {
  // expected-error @+1 {{'tfc.param' op expects parent op 'builtin.module'}}
  tfc.param @w : tensor<4xf32> = "zeros"
  return
}

// -----

// Tests that tfc.state may only appear directly in a module.
func.func @state_in_func() {
  // expected-error @+1 {{'tfc.state' op expects parent op 'builtin.module'}}
  tfc.state @s : tensor<4xf32> = "zeros"
  return
}

// -----

// Tests that two declarations cannot share a name.
module {
  // expected-note @+1 {{see existing symbol definition here}}
  tfc.param @w : tensor<4xf32> = "zeros"
  // expected-error @+1 {{redefinition of symbol named 'w'}}
  tfc.state @w : tensor<4xf32> = "zeros"
}

// -----

//===----------------------------------------------------------------------===//
// tfc.load / tfc.store
//===----------------------------------------------------------------------===//

// Tests that tfc.load of an undeclared symbol is refused.
module {
  func.func @load_unknown() {
    // expected-error @+1 {{'tfc.load' op refers to @missing, which is not declared by a tfc.param or tfc.state}}
    %0 = tfc.load @missing : tensor<4xf32>
    return
  }
}

// -----

// Tests that tfc.store to an undeclared symbol is refused.
module {
  func.func @store_unknown(%x: tensor<4xf32>) {
    // expected-error @+1 {{'tfc.store' op refers to @missing, which is not declared by a tfc.param or tfc.state}}
    tfc.store %x, @missing : tensor<4xf32>
    return
  }
}

// -----

// Tests that tfc.load of a function symbol is refused.
module {
  func.func @helper() {
    return
  }
  func.func @load_func() {
    // expected-error @+1 {{'tfc.load' op refers to @helper, which is a 'func.func', not a tfc.param or tfc.state}}
    %0 = tfc.load @helper : tensor<4xf32>
    return
  }
}

// -----

// Tests that tfc.store to a function symbol is refused.
module {
  func.func @store_func(%x: tensor<4xf32>) {
    // expected-error @+1 {{'tfc.store' op refers to @store_func, which is a 'func.func', not a tfc.param or tfc.state}}
    tfc.store %x, @store_func : tensor<4xf32>
    return
  }
}

// -----

// Tests that tfc.load's result type must equal the declared type.
module {
  tfc.param @w : tensor<4x8xf32> = "zeros"
  func.func @load_type() {
    // expected-error @+1 {{'tfc.load' op type 'tensor<8x4xf32>' does not match @w declared as 'tensor<4x8xf32>'}}
    %0 = tfc.load @w : tensor<8x4xf32>
    return
  }
}

// -----

// Tests that tfc.store's value type must equal the declared type (element
// type included).
module {
  tfc.state @s : tensor<4xf32> = "zeros"
  func.func @store_type(%x: tensor<4xbf16>) {
    // expected-error @+1 {{'tfc.store' op type 'tensor<4xbf16>' does not match @s declared as 'tensor<4xf32>'}}
    tfc.store %x, @s : tensor<4xbf16>
    return
  }
}

// -----

// Tests that a frozen parameter cannot be written.
module {
  tfc.param @emb : tensor<4xf32> = "zeros" frozen
  func.func @store_frozen(%x: tensor<4xf32>) {
    // expected-error @+1 {{'tfc.store' op writes frozen parameter @emb}}
    tfc.store %x, @emb : tensor<4xf32>
    return
  }
}

// -----

// Tests that tfc.load's result must be a valid tfc tensor.
module {
  tfc.param @w : tensor<4xf32> = "zeros"
  func.func @load_f64() {
    // expected-error @+1 {{'tfc.load' op result #0 must be tensor of f32/bf16/f16/i32/i64 with static, positive dimensions, but got 'tensor<4xf64>'}}
    %0 = tfc.load @w : tensor<4xf64>
    return
  }
}

// -----

//===----------------------------------------------------------------------===//
// tfc.iota
//===----------------------------------------------------------------------===//

// Tests that iota's dim must be below the result's rank.
func.func @iota_dim_too_big() {
  // expected-error @+1 {{'tfc.iota' op dim 2 is out of range for result of rank 2}}
  %0 = tfc.iota dim = 2 : tensor<4x8xi32>
  return
}

// -----

// Tests that iota's dim may not be negative.
func.func @iota_dim_negative() {
  // expected-error @+1 {{'tfc.iota' op dim -1 is out of range for result of rank 2}}
  %0 = tfc.iota dim = -1 : tensor<4x8xi32>
  return
}

// -----

// Tests that iota needs a result of rank >= 1.
func.func @iota_0d() {
  // expected-error @+1 {{'tfc.iota' op dim 0 is out of range for result of rank 0}}
  %0 = tfc.iota dim = 0 : tensor<i64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Tests that binary operands must share the element type.
func.func @binary_element_type(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+2 {{'tfc.mul' op operand 'rhs' has element type 'bf16' but operand 'lhs' has 'f32'; they must match}}
  // expected-error @+1 {{'tfc.mul' op failed to infer returned types}}
  %0 = tfc.mul %a, %b : tensor<4xf32>, tensor<4xbf16> -> tensor<4xf32>
  return
}

// -----

// Tests that binary operands must broadcast.
func.func @binary_broadcast(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{'tfc.sub' op operands do not broadcast: lhs [2, 3] vs rhs [4, 3]}}
  // expected-error @+1 {{'tfc.sub' op failed to infer returned types}}
  %0 = tfc.sub %a, %b : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

// Tests that broadcasting aligns from the right.
func.func @binary_broadcast_trailing(%a: tensor<4x3xi32>, %b: tensor<4xi32>) {
  // expected-error @+2 {{'tfc.max' op operands do not broadcast: lhs [4, 3] vs rhs [4]}}
  // expected-error @+1 {{'tfc.max' op failed to infer returned types}}
  %0 = tfc.max %a, %b : tensor<4x3xi32>, tensor<4xi32> -> tensor<4x3xi32>
  return
}

// -----

// Tests that pow needs float operands.
func.func @pow_int(%a: tensor<4xi32>) {
  // expected-error @+2 {{'tfc.pow' op operands 'lhs' and 'rhs' must be float tensors, got element type 'i32'}}
  // expected-error @+1 {{'tfc.pow' op failed to infer returned types}}
  %0 = tfc.pow %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return
}

// -----

// Tests that cast keeps the shape.
func.func @cast_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tfc.cast' op result shape [8, 4] differs from operand shape [4, 8]; cast only changes the element type}}
  %0 = tfc.cast %x : tensor<4x8xf32> -> tensor<8x4xbf16>
  return
}

// -----

// Tests that dropout's rate may not be negative.
func.func @dropout_rate_negative(%x: tensor<4xf32>, %seed: tensor<i64>) {
  // expected-error @+2 {{'tfc.dropout' op rate must be in [0, 1), got -1.000000e-01}}
  // expected-error @+1 {{'tfc.dropout' op failed to infer returned types}}
  %0 = tfc.dropout %x, %seed rate = -0.1 : tensor<4xf32>, tensor<i64> -> tensor<4xf32>
  return
}

// -----

// Tests that dropout's rate must be below 1.
func.func @dropout_rate_one(%x: tensor<4xf32>, %seed: tensor<i64>) {
  // expected-error @+2 {{'tfc.dropout' op rate must be in [0, 1), got 1.000000e+00}}
  // expected-error @+1 {{'tfc.dropout' op failed to infer returned types}}
  %0 = tfc.dropout %x, %seed rate = 1.0 : tensor<4xf32>, tensor<i64> -> tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tfc.matmul / tfc.linear
//===----------------------------------------------------------------------===//

// Tests that matmul operands must share the element type.
func.func @matmul_element_type(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+2 {{'tfc.matmul' op operand 'rhs' has element type 'f16' but operand 'lhs' has 'f32'; they must match}}
  // expected-error @+1 {{'tfc.matmul' op failed to infer returned types}}
  %0 = tfc.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf16> -> tensor<2x4xf32>
  return
}

// -----

// Tests that matmul's lhs must be at least a matrix.
func.func @matmul_lhs_rank(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{'tfc.matmul' op operand 'lhs' must have rank >= 2, got [3]}}
  // expected-error @+1 {{'tfc.matmul' op failed to infer returned types}}
  %0 = tfc.matmul %a, %b : tensor<3xf32>, tensor<3x4xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that matmul's rhs must be at least a matrix.
func.func @matmul_rhs_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'tfc.matmul' op operand 'rhs' must have rank >= 2, got [3]}}
  // expected-error @+1 {{'tfc.matmul' op failed to infer returned types}}
  %0 = tfc.matmul %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2xf32>
  return
}

// -----

// Tests that matmul's contracting dimensions must agree.
func.func @matmul_k(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'tfc.matmul' op contracting dimensions differ: lhs [2, 3] has K = 3 but rhs [4, 5] has K = 4}}
  // expected-error @+1 {{'tfc.matmul' op failed to infer returned types}}
  %0 = tfc.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  return
}

// -----

// Tests that the contracting-dimension message accounts for transposes.
func.func @matmul_k_transposed(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  // expected-error @+2 {{'tfc.matmul' op contracting dimensions differ: lhs [2, 3] (transposed) has K = 2 but rhs [2, 3] (transposed) has K = 3}}
  // expected-error @+1 {{'tfc.matmul' op failed to infer returned types}}
  %0 = tfc.matmul %a, %b transpose_lhs transpose_rhs : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

// Tests that matmul's batch dimensions must broadcast.
func.func @matmul_batch(%a: tensor<2x4x3xf32>, %b: tensor<3x3x5xf32>) {
  // expected-error @+2 {{'tfc.matmul' op batch dimensions do not broadcast: lhs [2] vs rhs [3]}}
  // expected-error @+1 {{'tfc.matmul' op failed to infer returned types}}
  %0 = tfc.matmul %a, %b : tensor<2x4x3xf32>, tensor<3x3x5xf32> -> tensor<2x4x5xf32>
  return
}

// -----

// Tests that linear's weight must share x's element type.
func.func @linear_weight_type(%x: tensor<2x8xf32>, %w: tensor<8x4xbf16>) {
  // expected-error @+2 {{'tfc.linear' op operand 'weight' has element type 'bf16' but operand 'x' has 'f32'; they must match}}
  // expected-error @+1 {{'tfc.linear' op failed to infer returned types}}
  %0 = tfc.linear %x, %w : (tensor<2x8xf32>, tensor<8x4xbf16>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that linear's x needs a last dimension.
func.func @linear_x_0d(%x: tensor<f32>, %w: tensor<1x4xf32>) {
  // expected-error @+2 {{'tfc.linear' op operand 'x' must have rank >= 1, got []}}
  // expected-error @+1 {{'tfc.linear' op failed to infer returned types}}
  %0 = tfc.linear %x, %w : (tensor<f32>, tensor<1x4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that linear's weight must be a matrix.
func.func @linear_weight_rank(%x: tensor<2x8xf32>, %w: tensor<2x8x4xf32>) {
  // expected-error @+2 {{'tfc.linear' op operand 'weight' must be a matrix, got [2, 8, 4]}}
  // expected-error @+1 {{'tfc.linear' op failed to infer returned types}}
  %0 = tfc.linear %x, %w : (tensor<2x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that linear's x and [K, N] weight must agree on K.
func.func @linear_k(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+2 {{'tfc.linear' op operand 'x' [2, 8] has last dimension 8 but 'weight' [4, 8] ([K, N]) expects K = 4}}
  // expected-error @+1 {{'tfc.linear' op failed to infer returned types}}
  %0 = tfc.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that linear's x and [N, K] weight (transpose_weight) must agree on K.
func.func @linear_k_transposed(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+2 {{'tfc.linear' op operand 'x' [2, 8] has last dimension 8 but 'weight' [8, 4] ([N, K], transpose_weight) expects K = 4}}
  // expected-error @+1 {{'tfc.linear' op failed to infer returned types}}
  %0 = tfc.linear %x, %w transpose_weight : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that linear's bias must share x's element type.
func.func @linear_bias_type(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{'tfc.linear' op operand 'bias' has element type 'f16' but operand 'x' has 'f32'; they must match}}
  // expected-error @+1 {{'tfc.linear' op failed to infer returned types}}
  %0 = tfc.linear %x, %w bias %b : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<4xf16>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that linear's bias must be [N].
func.func @linear_bias_shape(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'tfc.linear' op operand 'bias' has shape [8], expected [4]}}
  // expected-error @+1 {{'tfc.linear' op failed to infer returned types}}
  %0 = tfc.linear %x, %w bias %b : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that linear's bias must be 1-d.
func.func @linear_bias_rank(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+2 {{'tfc.linear' op operand 'bias' has shape [1, 4], expected [4]}}
  // expected-error @+1 {{'tfc.linear' op failed to infer returned types}}
  %0 = tfc.linear %x, %w bias %b : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Normalization, softmax
//===----------------------------------------------------------------------===//

// Tests that layer_norm's x needs a last dimension to normalize over.
func.func @layer_norm_0d(%x: tensor<f32>) {
  // expected-error @+2 {{'tfc.layer_norm' op operand 'x' must have rank >= 1 (it is normalized over its last dimension), got []}}
  // expected-error @+1 {{'tfc.layer_norm' op failed to infer returned types}}
  %0 = tfc.layer_norm %x eps = 1.0e-5 : (tensor<f32>) -> tensor<f32>
  return
}

// -----

// Tests that rms_norm's x needs a last dimension to normalize over.
func.func @rms_norm_0d(%x: tensor<f32>, %g: tensor<1xf32>) {
  // expected-error @+2 {{'tfc.rms_norm' op operand 'x' must have rank >= 1 (it is normalized over its last dimension), got []}}
  // expected-error @+1 {{'tfc.rms_norm' op failed to infer returned types}}
  %0 = tfc.rms_norm %x weight %g eps = 1.0e-5 : (tensor<f32>, tensor<1xf32>) -> tensor<f32>
  return
}

// -----

// Tests that layer_norm's weight must share x's element type.
func.func @layer_norm_weight_type(%x: tensor<2x8xf32>, %g: tensor<8xbf16>) {
  // expected-error @+2 {{'tfc.layer_norm' op operand 'weight' has element type 'bf16' but operand 'x' has 'f32'; they must match}}
  // expected-error @+1 {{'tfc.layer_norm' op failed to infer returned types}}
  %0 = tfc.layer_norm %x weight %g eps = 1.0e-5 : (tensor<2x8xf32>, tensor<8xbf16>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that layer_norm's weight must have the shape of x's last dimension.
func.func @layer_norm_weight_shape(%x: tensor<2x8xf32>, %g: tensor<2xf32>) {
  // expected-error @+2 {{'tfc.layer_norm' op operand 'weight' has shape [2], expected [8] (the last dimension of 'x')}}
  // expected-error @+1 {{'tfc.layer_norm' op failed to infer returned types}}
  %0 = tfc.layer_norm %x weight %g eps = 1.0e-5 : (tensor<2x8xf32>, tensor<2xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that layer_norm's bias must share x's element type.
func.func @layer_norm_bias_type(%x: tensor<2x8xf16>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'tfc.layer_norm' op operand 'bias' has element type 'f32' but operand 'x' has 'f16'; they must match}}
  // expected-error @+1 {{'tfc.layer_norm' op failed to infer returned types}}
  %0 = tfc.layer_norm %x bias %b eps = 1.0e-5 : (tensor<2x8xf16>, tensor<8xf32>) -> tensor<2x8xf16>
  return
}

// -----

// Tests that layer_norm's bias must be 1-d.
func.func @layer_norm_bias_shape(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<2x8xf32>) {
  // expected-error @+2 {{'tfc.layer_norm' op operand 'bias' has shape [2, 8], expected [8] (the last dimension of 'x')}}
  // expected-error @+1 {{'tfc.layer_norm' op failed to infer returned types}}
  %0 = tfc.layer_norm %x weight %g bias %b eps = 1.0e-5 : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that layer_norm's eps may not be negative.
func.func @layer_norm_eps_negative(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tfc.layer_norm' op eps must be finite and >= 0, got -1.000000e+00}}
  // expected-error @+1 {{'tfc.layer_norm' op failed to infer returned types}}
  %0 = tfc.layer_norm %x eps = -1.0 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that rms_norm's eps may not be infinite.
func.func @rms_norm_eps_inf(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tfc.rms_norm' op eps must be finite and >= 0, got INF}}
  // expected-error @+1 {{'tfc.rms_norm' op failed to infer returned types}}
  %0 = tfc.rms_norm %x eps = 0x7F800000 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that rms_norm's eps may not be NaN.
func.func @rms_norm_eps_nan(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tfc.rms_norm' op eps must be finite and >= 0, got nan}}
  // expected-error @+1 {{'tfc.rms_norm' op failed to infer returned types}}
  %0 = tfc.rms_norm %x eps = 0x7FC00000 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that rms_norm's weight must share x's element type.
func.func @rms_norm_weight_type(%x: tensor<2x8xbf16>, %g: tensor<8xf32>) {
  // expected-error @+2 {{'tfc.rms_norm' op operand 'weight' has element type 'f32' but operand 'x' has 'bf16'; they must match}}
  // expected-error @+1 {{'tfc.rms_norm' op failed to infer returned types}}
  %0 = tfc.rms_norm %x weight %g eps = 1.0e-6 : (tensor<2x8xbf16>, tensor<8xf32>) -> tensor<2x8xbf16>
  return
}

// -----

// Tests that rms_norm's weight must have the shape of x's last dimension.
func.func @rms_norm_weight_shape(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+2 {{'tfc.rms_norm' op operand 'weight' has shape [4], expected [8] (the last dimension of 'x')}}
  // expected-error @+1 {{'tfc.rms_norm' op failed to infer returned types}}
  %0 = tfc.rms_norm %x weight %g eps = 1.0e-6 : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Tests that softmax's dim must be within the rank.
func.func @softmax_dim(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tfc.softmax' op dim 2 is out of range for operand of rank 2}}
  // expected-error @+1 {{'tfc.softmax' op failed to infer returned types}}
  %0 = tfc.softmax %x dim = 2 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// Tests that log_softmax's negative dim must be within the rank.
func.func @log_softmax_dim(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tfc.log_softmax' op dim -3 is out of range for operand of rank 2}}
  // expected-error @+1 {{'tfc.log_softmax' op failed to infer returned types}}
  %0 = tfc.log_softmax %x dim = -3 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// tfc.attention / tfc.rotary / tfc.embedding
//===----------------------------------------------------------------------===//

// Tests that attention's query must be 4-d.
func.func @attention_query_rank(%q: tensor<2x8x4xf32>, %k: tensor<1x2x8x4xf32>) {
  // expected-error @+2 {{'tfc.attention' op operand 'query' must be [B, H, T, D], got [2, 8, 4]}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %k : (tensor<2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that attention's key must be 4-d.
func.func @attention_key_rank(%q: tensor<1x2x8x4xf32>, %k: tensor<2x8x4xf32>) {
  // expected-error @+2 {{'tfc.attention' op operand 'key' must be [B, H, T, D], got [2, 8, 4]}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %q : (tensor<1x2x8x4xf32>, tensor<2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that attention's value must be 4-d.
func.func @attention_value_rank(%q: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4x1xf32>) {
  // expected-error @+2 {{'tfc.attention' op operand 'value' must be [B, H, T, D], got [1, 2, 8, 4, 1]}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %q, %v : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4x1xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that attention's key must share query's element type.
func.func @attention_key_type(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xbf16>) {
  // expected-error @+2 {{'tfc.attention' op operand 'key' has element type 'bf16' but operand 'query' has 'f32'; they must match}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %q : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that attention's value must share query's element type.
func.func @attention_value_type(%q: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf16>) {
  // expected-error @+2 {{'tfc.attention' op operand 'value' has element type 'f16' but operand 'query' has 'f32'; they must match}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %q, %v : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf16>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that attention's key batch must match query's.
func.func @attention_key_batch(%q: tensor<2x2x8x4xf32>, %k: tensor<3x2x8x4xf32>) {
  // expected-error @+2 {{'tfc.attention' op operand 'key' has batch 3, expected 2 (from 'query')}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %k : (tensor<2x2x8x4xf32>, tensor<3x2x8x4xf32>, tensor<3x2x8x4xf32>) -> tensor<2x2x8x4xf32>
  return
}

// -----

// Tests that attention's value batch must match key's.
func.func @attention_value_batch(%q: tensor<2x2x8x4xf32>, %v: tensor<1x2x8x4xf32>) {
  // expected-error @+2 {{'tfc.attention' op operand 'value' has batch 1, expected 2 (from 'key')}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %q, %v : (tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<2x2x8x4xf32>
  return
}

// -----

// Tests that key/value heads must divide query heads (GQA).
func.func @attention_heads_divide(%q: tensor<1x8x4x16xf32>, %k: tensor<1x3x4x16xf32>) {
  // expected-error @+2 {{'tfc.attention' op key/value heads (3) must divide query heads (8)}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %k : (tensor<1x8x4x16xf32>, tensor<1x3x4x16xf32>, tensor<1x3x4x16xf32>) -> tensor<1x8x4x16xf32>
  return
}

// -----

// Tests that value must have as many heads as key.
func.func @attention_value_heads(%q: tensor<1x8x4x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x4x4x16xf32>) {
  // expected-error @+2 {{'tfc.attention' op operand 'value' has 4 heads, expected 2 (from 'key')}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %v : (tensor<1x8x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1x4x4x16xf32>) -> tensor<1x8x4x16xf32>
  return
}

// -----

// Tests that key's head dim must match query's.
func.func @attention_key_head_dim(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x4x8xf32>) {
  // expected-error @+2 {{'tfc.attention' op operand 'key' has head dim 8, expected 16 (from 'query')}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %k : (tensor<1x2x4x16xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return
}

// -----

// Tests that value's length must match key's.
func.func @attention_value_length(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x4x16xf32>) {
  // expected-error @+2 {{'tfc.attention' op operand 'value' has length 4, expected 8 (from 'key')}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %v : (tensor<1x2x4x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

// Tests that attention's scale must be positive.
func.func @attention_scale_zero(%q: tensor<1x2x4x16xf32>) {
  // expected-error @+2 {{'tfc.attention' op scale must be finite and > 0, got 0.000000e+00}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %q, %q scale = 0.0 : (tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

// Tests that attention's scale must be finite.
func.func @attention_scale_inf(%q: tensor<1x2x4x16xf32>) {
  // expected-error @+2 {{'tfc.attention' op scale must be finite and > 0, got INF}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %q, %q scale = 0x7F800000 : (tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32>
  return
}

// -----

// Tests that an offset without causal is refused.
func.func @attention_offset_without_causal(%q: tensor<1x2x1x16xf32>, %k: tensor<1x2x8x16xf32>, %pos: tensor<i32>) {
  // expected-error @+2 {{'tfc.attention' op 'offset' only has a meaning with 'causal'}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %k offset %pos : (tensor<1x2x1x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<i32>) -> tensor<1x2x1x16xf32>
  return
}

// -----

// Tests that causal attention with more queries than keys needs an offset.
func.func @attention_causal_needs_offset(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x4x16xf32>) {
  // expected-error @+2 {{'tfc.attention' op causal attention with more queries (8) than keys (4) needs an explicit 'offset'}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %k causal : (tensor<1x2x8x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// Tests that rotary's x must be 4-d.
func.func @rotary_rank(%x: tensor<2x8x16xf32>) {
  // expected-error @+2 {{'tfc.rotary' op operand 'x' must be [B, H, T, D], got [2, 8, 16]}}
  // expected-error @+1 {{'tfc.rotary' op failed to infer returned types}}
  %0 = tfc.rotary %x theta = 10000.0 : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

// Tests that rotary's head dim must be even.
func.func @rotary_odd(%x: tensor<1x2x8x5xf32>) {
  // expected-error @+2 {{'tfc.rotary' op operand 'x' [1, 2, 8, 5] has head dim D = 5, which must be even}}
  // expected-error @+1 {{'tfc.rotary' op failed to infer returned types}}
  %0 = tfc.rotary %x theta = 10000.0 : (tensor<1x2x8x5xf32>) -> tensor<1x2x8x5xf32>
  return
}

// -----

// Tests that rotary's theta must be > 1.
func.func @rotary_theta(%x: tensor<1x2x8x4xf32>) {
  // expected-error @+2 {{'tfc.rotary' op theta must be finite and > 1, got 1.000000e+00}}
  // expected-error @+1 {{'tfc.rotary' op failed to infer returned types}}
  %0 = tfc.rotary %x theta = 1.0 : (tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that rotary's frequencies are one f32 per pair of the head dim.
func.func @rotary_frequencies(%x: tensor<1x2x8x4xf32>, %f: tensor<4xf32>) {
  // expected-error @+2 {{'tfc.rotary' op operand 'frequencies' must be a [2] f32 tensor (one per pair of the head dim 4), got 'tensor<4xf32>'}}
  // expected-error @+1 {{'tfc.rotary' op failed to infer returned types}}
  %0 = tfc.rotary %x frequencies %f theta = 1.0e4 : (tensor<1x2x8x4xf32>, tensor<4xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that rotary's theta must be finite.
func.func @rotary_theta_inf(%x: tensor<1x2x8x4xf32>) {
  // expected-error @+2 {{'tfc.rotary' op theta must be finite and > 1, got INF}}
  // expected-error @+1 {{'tfc.rotary' op failed to infer returned types}}
  %0 = tfc.rotary %x theta = 0x7F800000 : (tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that embedding's table must be [V, D].
func.func @embedding_table_rank(%t: tensor<10xf32>, %ids: tensor<3xi32>) {
  // expected-error @+2 {{'tfc.embedding' op operand 'table' must be [V, D], got [10]}}
  // expected-error @+1 {{'tfc.embedding' op failed to infer returned types}}
  %0 = tfc.embedding %t, %ids : tensor<10xf32>, tensor<3xi32> -> tensor<3xf32>
  return
}

// -----

// Tests that embedding_grad's `init` has the result's type.
func.func @embedding_grad_init_type(%g: tensor<3x4xf32>, %ids: tensor<3xi32>, %w: tensor<10x5xf32>) {
  // expected-error @+1 {{'tfc.embedding_grad' op operand 'init' has type 'tensor<10x5xf32>', expected the result's 'tensor<10x4xf32>'}}
  %0 = tfc.embedding_grad %g, %ids into %w : (tensor<3x4xf32>, tensor<3xi32>, tensor<10x5xf32>) -> tensor<10x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

// Tests that reshape keeps the element count.
func.func @reshape_count(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'tfc.reshape' op cannot reshape [4, 6] (24 elements) to [5, 5] (25 elements)}}
  %0 = tfc.reshape %x : tensor<4x6xf32> -> tensor<5x5xf32>
  return
}

// -----

// Tests that reshape keeps the element type.
func.func @reshape_element_type(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'tfc.reshape' op result element type 'i32' differs from operand's 'f32'}}
  %0 = tfc.reshape %x : tensor<4x6xf32> -> tensor<24xi32>
  return
}

// -----

// Tests that transpose's perm needs one entry per dimension.
func.func @transpose_perm_size(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'tfc.transpose' op perm has 2 entries but operand has rank 3}}
  // expected-error @+1 {{'tfc.transpose' op failed to infer returned types}}
  %0 = tfc.transpose %x perm = [1, 0] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  return
}

// -----

// Tests that transpose's perm may not repeat a dimension.
func.func @transpose_perm_repeat(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'tfc.transpose' op perm [0, 1, 1] is not a permutation of [0, 3)}}
  // expected-error @+1 {{'tfc.transpose' op failed to infer returned types}}
  %0 = tfc.transpose %x perm = [0, 1, 1] : tensor<2x3x4xf32> -> tensor<2x3x3xf32>
  return
}

// -----

// Tests that transpose's perm entries must be within the rank.
func.func @transpose_perm_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'tfc.transpose' op perm [0, -1] is not a permutation of [0, 2)}}
  // expected-error @+1 {{'tfc.transpose' op failed to infer returned types}}
  %0 = tfc.transpose %x perm = [0, -1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// Tests that concat needs at least one input.
func.func @concat_empty() {
  // expected-error @+2 {{'tfc.concat' op needs at least one input}}
  // expected-error @+1 {{'tfc.concat' op failed to infer returned types}}
  %0 = tfc.concat dim = 0 : () -> tensor<2xf32>
  return
}

// -----

// Tests that concat's dim must be within the inputs' rank.
func.func @concat_dim(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'tfc.concat' op dim 2 is out of range for inputs of rank 2}}
  // expected-error @+1 {{'tfc.concat' op failed to infer returned types}}
  %0 = tfc.concat %a, %a dim = 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

// Tests that concat's inputs must share the element type.
func.func @concat_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) {
  // expected-error @+2 {{'tfc.concat' op input #1 has element type 'i32' but input #0 has 'f32'}}
  // expected-error @+1 {{'tfc.concat' op failed to infer returned types}}
  %0 = tfc.concat %a, %b dim = 0 : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that concat's inputs must share the rank.
func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'tfc.concat' op input #2 has rank 1 but input #0 has rank 2}}
  // expected-error @+1 {{'tfc.concat' op failed to infer returned types}}
  %0 = tfc.concat %a, %a, %b dim = 0 : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that concat's inputs may only differ along dim.
func.func @concat_shape(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{'tfc.concat' op input #1 [2, 4] differs from input #0 [2, 3] in dimension 1 (only dimension 0 may differ)}}
  // expected-error @+1 {{'tfc.concat' op failed to infer returned types}}
  %0 = tfc.concat %a, %b dim = 0 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

// Tests that slice needs start, limit and stride for every dimension.
func.func @slice_sizes(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tfc.slice' op start, limit and stride need 2 entries each (the operand's rank), got 2, 1 and 2}}
  // expected-error @+1 {{'tfc.slice' op failed to infer returned types}}
  %0 = tfc.slice %x start = [0, 0] limit = [4] stride = [1, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Tests that slice's limit may not exceed the dimension.
func.func @slice_limit(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tfc.slice' op dimension 1: need 0 <= start < limit <= 8, got start 0 and limit 9}}
  // expected-error @+1 {{'tfc.slice' op failed to infer returned types}}
  %0 = tfc.slice %x start = [0, 0] limit = [4, 9] stride = [1, 1] : tensor<4x8xf32> -> tensor<4x9xf32>
  return
}

// -----

// Tests that slice's window may not be empty.
func.func @slice_empty(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tfc.slice' op dimension 0: need 0 <= start < limit <= 4, got start 2 and limit 2}}
  // expected-error @+1 {{'tfc.slice' op failed to infer returned types}}
  %0 = tfc.slice %x start = [2, 0] limit = [2, 8] stride = [1, 1] : tensor<4x8xf32> -> tensor<1x8xf32>
  return
}

// -----

// Tests that slice's start may not be negative.
func.func @slice_negative_start(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tfc.slice' op dimension 0: need 0 <= start < limit <= 4, got start -1 and limit 4}}
  // expected-error @+1 {{'tfc.slice' op failed to infer returned types}}
  %0 = tfc.slice %x start = [-1, 0] limit = [4, 8] stride = [1, 1] : tensor<4x8xf32> -> tensor<5x8xf32>
  return
}

// -----

// Tests that slice's stride must be >= 1.
func.func @slice_stride(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'tfc.slice' op dimension 1: stride must be >= 1, got 0}}
  // expected-error @+1 {{'tfc.slice' op failed to infer returned types}}
  %0 = tfc.slice %x start = [0, 0] limit = [4, 8] stride = [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// Tests that dynamic_slice's dim must be within the rank.
func.func @dynamic_slice_dim(%x: tensor<4x8xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'tfc.dynamic_slice' op dim 2 is out of range for operand of rank 2}}
  %0 = tfc.dynamic_slice %x[%i] dim = 2 : (tensor<4x8xf32>, tensor<i32>) -> tensor<4x1xf32>
  return
}

// -----

// Tests that dynamic_slice keeps the rank.
func.func @dynamic_slice_rank(%x: tensor<4x8xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'tfc.dynamic_slice' op result 'tensor<8xf32>' must have the operand's rank and element type ('tensor<4x8xf32>')}}
  %0 = tfc.dynamic_slice %x[%i] dim = 0 : (tensor<4x8xf32>, tensor<i32>) -> tensor<8xf32>
  return
}

// -----

// Tests that dynamic_slice keeps the element type.
func.func @dynamic_slice_element_type(%x: tensor<4x8xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'tfc.dynamic_slice' op result 'tensor<1x8xf16>' must have the operand's rank and element type ('tensor<4x8xf32>')}}
  %0 = tfc.dynamic_slice %x[%i] dim = 0 : (tensor<4x8xf32>, tensor<i32>) -> tensor<1x8xf16>
  return
}

// -----

// Tests that dynamic_slice's window may not exceed the dimension.
func.func @dynamic_slice_length(%x: tensor<4x8xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'tfc.dynamic_slice' op result length 5 along dim 0 exceeds the operand's 4}}
  %0 = tfc.dynamic_slice %x[%i] dim = 0 : (tensor<4x8xf32>, tensor<i32>) -> tensor<5x8xf32>
  return
}

// -----

// Tests that dynamic_slice keeps the dimensions it does not slice.
func.func @dynamic_slice_other_dim(%x: tensor<4x8xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'tfc.dynamic_slice' op result [1, 4] differs from operand [4, 8] in dimension 1, which is not sliced}}
  %0 = tfc.dynamic_slice %x[%i] dim = -2 : (tensor<4x8xf32>, tensor<i32>) -> tensor<1x4xf32>
  return
}

// -----

// Tests that broadcast_to keeps the element type.
func.func @broadcast_to_element_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tfc.broadcast_to' op result element type 'bf16' differs from operand's 'f32'}}
  %0 = tfc.broadcast_to %x : tensor<4xf32> -> tensor<2x4xbf16>
  return
}

// -----

// Tests that broadcast_to follows NumPy rules.
func.func @broadcast_to_shape(%x: tensor<3xf32>) {
  // expected-error @+1 {{'tfc.broadcast_to' op operand [3] does not broadcast to [3, 4]}}
  %0 = tfc.broadcast_to %x : tensor<3xf32> -> tensor<3x4xf32>
  return
}

// -----

// Tests that broadcast_to cannot lower the rank.
func.func @broadcast_to_lower_rank(%x: tensor<1x4xf32>) {
  // expected-error @+1 {{'tfc.broadcast_to' op operand [1, 4] does not broadcast to [4]}}
  %0 = tfc.broadcast_to %x : tensor<1x4xf32> -> tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// Tests that a reduction names at least one dimension.
func.func @reduce_no_dims(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tfc.reduce_sum' op dims must name at least one dimension}}
  // expected-error @+1 {{'tfc.reduce_sum' op failed to infer returned types}}
  %0 = tfc.reduce_sum %x dims = [] : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// Tests that a reduction's dims must be within the rank.
func.func @reduce_dim_range(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tfc.reduce_mean' op dim -3 is out of range for operand of rank 2}}
  // expected-error @+1 {{'tfc.reduce_mean' op failed to infer returned types}}
  %0 = tfc.reduce_mean %x dims = [-3] : tensor<2x8xf32> -> tensor<8xf32>
  return
}

// -----

// Tests that a reduction's dims are distinct (after normalization).
func.func @reduce_dim_twice(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tfc.reduce_max' op dim -1 is listed twice in [1, -1]}}
  // expected-error @+1 {{'tfc.reduce_max' op failed to infer returned types}}
  %0 = tfc.reduce_max %x dims = [1, -1] : tensor<2x8xf32> -> tensor<2xf32>
  return
}

// -----

// Tests that keepdim must show in the result type.
func.func @reduce_keepdim_result(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tfc.reduce_sum' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'tfc.reduce_sum' op failed to infer returned types}}
  %0 = tfc.reduce_sum %x dims = [1] keepdim : tensor<2x8xf32> -> tensor<2xf32>
  return
}

// -----

// Tests that argmax needs rank >= 2.
func.func @argmax_rank(%x: tensor<8xf32>) {
  // expected-error @+2 {{'tfc.argmax' op operand 'x' must have rank >= 2 (the result keeps the other dimensions), got [8]}}
  // expected-error @+1 {{'tfc.argmax' op failed to infer returned types}}
  %0 = tfc.argmax %x dim = 0 : tensor<8xf32> -> tensor<i32>
  return
}

// -----

// Tests that argmax's dim must be within the rank.
func.func @argmax_dim(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'tfc.argmax' op dim 2 is out of range for operand of rank 2}}
  // expected-error @+1 {{'tfc.argmax' op failed to infer returned types}}
  %0 = tfc.argmax %x dim = 2 : tensor<2x8xf32> -> tensor<2xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Losses, sampling, KV caches
//===----------------------------------------------------------------------===//

// Tests that cross_entropy's logits need a vocabulary dimension and a leading
// one.
func.func @cross_entropy_rank(%x: tensor<8xf32>, %t: tensor<i32>) {
  // expected-error @+2 {{'tfc.cross_entropy' op operand 'logits' must be [..., V] with rank >= 2, got [8]}}
  // expected-error @+1 {{'tfc.cross_entropy' op failed to infer returned types}}
  %0 = tfc.cross_entropy %x, %t ignore_index = -100 : tensor<8xf32>, tensor<i32> -> tensor<f32>
  return
}

// -----

// Tests that cross_entropy's targets have the leading shape of the logits.
func.func @cross_entropy_targets(%x: tensor<4x8x50xf32>, %t: tensor<4x50xi32>) {
  // expected-error @+2 {{'tfc.cross_entropy' op operand 'targets' has shape [4, 50], expected [4, 8] (the leading dimensions of 'logits' [4, 8, 50])}}
  // expected-error @+1 {{'tfc.cross_entropy' op failed to infer returned types}}
  %0 = tfc.cross_entropy %x, %t ignore_index = -100 : tensor<4x8x50xf32>, tensor<4x50xi32> -> tensor<f32>
  return
}

// -----

// Tests that cross_entropy's result is a 0-d f32.
func.func @cross_entropy_result(%x: tensor<4x50xf32>, %t: tensor<4xi32>) {
  // expected-error @+1 {{'tfc.cross_entropy' op result #0 must be 0-d tensor of f32, but got 'tensor<4xf32>'}}
  %0 = tfc.cross_entropy %x, %t ignore_index = -100 : tensor<4x50xf32>, tensor<4xi32> -> tensor<4xf32>
  return
}

// -----

// Tests that sample's logits must be [B, V].
func.func @sample_rank(%x: tensor<1x2x50xf32>, %t: tensor<f32>, %k: tensor<i32>, %seed: tensor<i64>) {
  // expected-error @+2 {{'tfc.sample' op operand 'logits' must be [B, V], got [1, 2, 50]}}
  // expected-error @+1 {{'tfc.sample' op failed to infer returned types}}
  %0 = tfc.sample %x, %t, %k, %t, %seed : (tensor<1x2x50xf32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i64>) -> tensor<1xi32>
  return
}

// -----

// Tests that kv_cache_update's update must share the cache's element type.
func.func @kv_cache_update_type(%c: tensor<1x2x8x4xf32>, %u: tensor<1x2x1x4xbf16>, %p: tensor<i32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op operand 'update' has element type 'bf16' but operand 'cache' has 'f32'; they must match}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p dim = 2 : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xbf16>, tensor<i32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that kv_cache_update's update must have the cache's rank.
func.func @kv_cache_update_rank(%c: tensor<1x2x8x4xf32>, %u: tensor<2x1x4xf32>, %p: tensor<i32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op operand 'update' has rank 3 but 'cache' has rank 4}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p dim = 2 : (tensor<1x2x8x4xf32>, tensor<2x1x4xf32>, tensor<i32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that kv_cache_update's positions per row have the update's row count.
func.func @kv_cache_update_per_row(%c: tensor<2x2x8x4xf32>, %u: tensor<2x2x1x4xf32>, %p: tensor<3xi32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op operand 'position' has 3 positions (one per row), but the batch is 2}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p dim = 2 : (tensor<2x2x8x4xf32>, tensor<2x2x1x4xf32>, tensor<3xi32>) -> tensor<2x2x8x4xf32>
  return
}

// -----

// Tests that an update with positions per row has at most the cache's rows.
func.func @kv_cache_update_per_row_too_many(%c: tensor<2x2x8x4xf32>, %u: tensor<3x2x1x4xf32>, %p: tensor<3xi32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op operand 'update' [3, 2, 1, 4] does not fit 'cache' [2, 2, 8, 4] in dimension 0}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p dim = 2 : (tensor<2x2x8x4xf32>, tensor<3x2x1x4xf32>, tensor<3xi32>) -> tensor<2x2x8x4xf32>
  return
}

// -----

// Tests that a query with offsets per row reads at most the cache's rows.
func.func @attention_per_row_more_queries(%q: tensor<3x2x1x4xf32>, %k: tensor<2x2x8x4xf32>, %pos: tensor<3xi32>) {
  // expected-error @+2 {{'tfc.attention' op operand 'key' has batch 2, expected at least 3 (from 'query')}}
  // expected-error @+1 {{'tfc.attention' op failed to infer returned types}}
  %0 = tfc.attention %q, %k, %k offset %pos causal : (tensor<3x2x1x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<3xi32>) -> tensor<3x2x1x4xf32>
  return
}

// -----

// Tests that positions per row cannot write along the rows themselves.
func.func @kv_cache_update_per_row_dim0(%c: tensor<2x2x8x4xf32>, %u: tensor<1x2x8x4xf32>, %p: tensor<1xi32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op one position per row (a 1-d 'position') needs dim > 0; dim 0 is the rows}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p dim = 0 : (tensor<2x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1xi32>) -> tensor<2x2x8x4xf32>
  return
}

// -----

// Tests that kv_cache_update's dim must be within the rank.
func.func @kv_cache_update_dim(%c: tensor<1x2x8x4xf32>, %u: tensor<1x2x1x4xf32>, %p: tensor<i32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op dim 4 is out of range for a cache of rank 4}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p dim = 4 : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<i32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that kv_cache_update's update may not be longer than the cache.
func.func @kv_cache_update_too_long(%c: tensor<1x2x8x4xf32>, %u: tensor<1x2x9x4xf32>, %p: tensor<i32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op operand 'update' [1, 2, 9, 4] does not fit 'cache' [1, 2, 8, 4] in dimension 2}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p dim = 2 : (tensor<1x2x8x4xf32>, tensor<1x2x9x4xf32>, tensor<i32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that kv_cache_update's update must match the cache outside dim.
func.func @kv_cache_update_other_dim(%c: tensor<1x2x8x4xf32>, %u: tensor<1x2x1x8xf32>, %p: tensor<i32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op operand 'update' [1, 2, 1, 8] does not fit 'cache' [1, 2, 8, 4] in dimension 3}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p dim = -2 : (tensor<1x2x8x4xf32>, tensor<1x2x1x8xf32>, tensor<i32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

// Tests that a fused kernel's kind is one codegen knows.
func.func @fused_kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.fused' op kind 'matmul' is not one of 'pointwise', 'reduction', 'row', 'linear'}}
  %0 = tfc.fused "matmul" (%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %1 = tfc.exp %x : tensor<4xf32>
    tfc.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Tests that a fused body's arguments are its operands.
func.func @fused_arguments(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.fused' op body argument #0 has type 'tensor<4xf16>', expected the operand's 'tensor<4xf32>'}}
  %0 = tfc.fused "pointwise" (%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf16>):
    %1 = tfc.cast %x : tensor<4xf16> -> tensor<4xf32>
    tfc.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Tests that a fused body yields the op's result types.
func.func @fused_yield(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.fused' op yields 'tensor<4xf16>', expected the result types 'tensor<4xf32>'}}
  %0 = tfc.fused "pointwise" (%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %1 = tfc.cast %x : tensor<4xf32> -> tensor<4xf16>
    tfc.yield %1 : tensor<4xf16>
  }
  return %0 : tensor<4xf32>
}

// -----

// Tests that a fused body is isolated: it cannot read values from outside.
func.func @fused_isolated(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tfc.fused "pointwise" (%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    // expected-error @+2 {{using value defined outside the region}}
    // expected-note @-3 {{required by region isolation constraints}}
    %1 = tfc.add %x, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tfc.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Tests that a pointwise kernel holds only elementwise ops over one shape.
func.func @fused_not_pointwise(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tfc.fused' op 'tfc.softmax' cannot be part of a pointwise kernel}}
  %0 = tfc.fused "pointwise" (%a) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %1 = tfc.softmax %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    tfc.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that every op of a pointwise kernel has the iteration shape.
func.func @fused_other_shape(%a: tensor<8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tfc.fused' op body op 'tfc.exp' has shape 'tensor<8xf32>'; every op of the loop must have the iteration shape}}
  %0 = tfc.fused "pointwise" (%a, %b) : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<8xf32>, %y: tensor<4x8xf32>):
    %1 = tfc.exp %x : tensor<8xf32>
    %2 = tfc.add %y, %1 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    tfc.yield %2 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that a reduction kernel ends with its reduction.
func.func @fused_reduction_end(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.fused' op a reduction kernel yields one value, the reduce_sum, reduce_mean or reduce_max that ends its body}}
  %0 = tfc.fused "reduction" (%a) : (tensor<4x8xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %1 = tfc.reduce_sum %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
    %2 = tfc.exp %1 : tensor<4xf32>
    tfc.yield %2 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Tests that a linear kernel is what the library's epilogue applies: here
// the activation is the exact (erf) GELU, which it does not have.
func.func @fused_linear_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'tfc.fused' op a linear kernel is tfc.linear on its operands, then optionally gelu (tanh), relu, silu or leaky_relu of it, then optionally an add of an operand of the same type, and yields the last}}
  %0 = tfc.fused "linear" (%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>):
    %1 = tfc.linear %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %2 = tfc.gelu %1 approximate = none : tensor<4x16xf32>
    tfc.yield %2 : tensor<4x16xf32>
  }
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that a row kernel ends with a norm or softmax over the last dimension.
func.func @fused_row_dim(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tfc.fused' op a row kernel ends with layer_norm, rms_norm, softmax or log_softmax (f32, over the last dimension; weight and bias operands of the kernel) and yields its result}}
  %0 = tfc.fused "row" (%a) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %1 = tfc.exp %x : tensor<4x8xf32>
    %2 = tfc.softmax %1 dim = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
    tfc.yield %2 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that a row kernel's prologue reads rows, vectors along the row or
// scalars: a column broadcast across the row is none of them.
func.func @fused_row_operand(%a: tensor<4x8xf32>, %c: tensor<4x1xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tfc.fused' op operand #1 of type 'tensor<4x1xf32>' is not a row, a vector along the row or a scalar}}
  %0 = tfc.fused "row" (%a, %c) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x8xf32>, %y: tensor<4x1xf32>):
    %1 = tfc.mul %x, %y : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    %2 = tfc.layer_norm %1 eps = 1.0e-5 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    tfc.yield %2 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that moe_route's top_k is at most the number of experts.
func.func @moe_route_top_k(%l: tensor<8x4xf32>) {
  // expected-error @+2 {{'tfc.moe_route' op top_k (5) must be in [1, E] with E = 4 experts}}
  // expected-error @+1 {{'tfc.moe_route' op failed to infer returned types}}
  %0 = tfc.moe_route %l top_k = 5 : tensor<8x4xf32> -> tensor<8x5xi32>
  return
}

// -----

// Tests that moe_ffn's experts come in (w1, w3, w2) triples.
func.func @moe_ffn_triples(%x: tensor<8x4xf32>, %ids: tensor<8x1xi32>, %w: tensor<8x1xf32>, %a: tensor<6x4xf32>) {
  // expected-error @+2 {{'tfc.moe_ffn' op expects 3 expert matrices per expert (w1, w3, w2), got 2}}
  // expected-error @+1 {{'tfc.moe_ffn' op failed to infer returned types}}
  %0 = tfc.moe_ffn %x, %ids, %w experts %a, %a : (tensor<8x4xf32>, tensor<8x1xi32>, tensor<8x1xf32>, tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Tests that moe_ffn names the expert matrix whose shape is wrong.
func.func @moe_ffn_down_shape(%x: tensor<8x4xf32>, %ids: tensor<8x1xi32>, %w: tensor<8x1xf32>, %a: tensor<6x4xf32>) {
  // expected-error @+2 {{'tfc.moe_ffn' op expert 0's w2 has type 'tensor<6x4xf32>', expected [4, 6] of 'f32'}}
  // expected-error @+1 {{'tfc.moe_ffn' op failed to infer returned types}}
  %0 = tfc.moe_ffn %x, %ids, %w experts %a, %a, %a : (tensor<8x4xf32>, tensor<8x1xi32>, tensor<8x1xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Tests that moe_ffn's weights are [N, E].
func.func @moe_ffn_weights(%x: tensor<8x4xf32>, %ids: tensor<8x1xi32>, %w: tensor<4x2xf32>, %a: tensor<6x4xf32>, %d: tensor<4x6xf32>) {
  // expected-error @+2 {{'tfc.moe_ffn' op operand 'weights' has shape [4, 2], expected [8, E] (N tokens, E experts)}}
  // expected-error @+1 {{'tfc.moe_ffn' op failed to infer returned types}}
  %0 = tfc.moe_ffn %x, %ids, %w experts %a, %a, %d : (tensor<8x4xf32>, tensor<8x1xi32>, tensor<4x2xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Tests that the experts a moe_ffn holds (expert parallelism: 1 of the 2
// that weights count, from first_expert) lie among weights' columns.
func.func @moe_ffn_held_experts(%x: tensor<8x4xf32>, %ids: tensor<8x1xi32>, %w: tensor<8x2xf32>, %a: tensor<6x4xf32>, %d: tensor<4x6xf32>) {
  // expected-error @+2 {{'tfc.moe_ffn' op holds experts 2 to 2 (first_expert 2, 1 given), outside the 2 of operand 'weights'}}
  // expected-error @+1 {{'tfc.moe_ffn' op failed to infer returned types}}
  %0 = tfc.moe_ffn %x, %ids, %w experts %a, %a, %d {first_expert = 2 : i64} : (tensor<8x4xf32>, tensor<8x1xi32>, tensor<8x2xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Tests that a paged cache is written along its block slots (dim 2).
func.func @paged_update_dim(%c: tensor<9x2x4x8xf32>, %u: tensor<3x2x1x8xf32>, %p: tensor<3xi32>, %t: tensor<3x5xi32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op a paged cache ('blocks') must be [NB, Hkv, S, D] with dim = 2, got [9, 2, 4, 8] and dim 1}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p blocks %t dim = 1 : (tensor<9x2x4x8xf32>, tensor<3x2x1x8xf32>, tensor<3xi32>, tensor<3x5xi32>) -> tensor<9x2x4x8xf32>
  return
}

// -----

// Tests that a paged cache needs one position per row.
func.func @paged_update_scalar_pos(%c: tensor<9x2x4x8xf32>, %u: tensor<3x2x1x8xf32>, %p: tensor<i32>, %t: tensor<3x5xi32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op a paged cache needs one position per row (a 1-d 'position')}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p blocks %t dim = 2 : (tensor<9x2x4x8xf32>, tensor<3x2x1x8xf32>, tensor<i32>, tensor<3x5xi32>) -> tensor<9x2x4x8xf32>
  return
}

// -----

// Tests that the block table has one row per row of the update.
func.func @paged_update_table(%c: tensor<9x2x4x8xf32>, %u: tensor<3x2x1x8xf32>, %p: tensor<3xi32>, %t: tensor<2x5xi32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op operand 'blocks' must be [B, M] with B = 3 (the update's rows), got [2, 5]}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p blocks %t dim = 2 : (tensor<9x2x4x8xf32>, tensor<3x2x1x8xf32>, tensor<3xi32>, tensor<2x5xi32>) -> tensor<9x2x4x8xf32>
  return
}

// -----

// Tests that the update's heads match the pool's.
func.func @paged_update_heads(%c: tensor<9x2x4x8xf32>, %u: tensor<3x3x1x8xf32>, %p: tensor<3xi32>, %t: tensor<3x5xi32>) {
  // expected-error @+2 {{'tfc.kv_cache_update' op operand 'update' [3, 3, 1, 8] does not fit the blocks of 'cache' [9, 2, 4, 8] (heads and head dim)}}
  // expected-error @+1 {{'tfc.kv_cache_update' op failed to infer returned types}}
  %0 = tfc.kv_cache_update %c, %u, %p blocks %t dim = 2 : (tensor<9x2x4x8xf32>, tensor<3x3x1x8xf32>, tensor<3xi32>, tensor<3x5xi32>) -> tensor<9x2x4x8xf32>
  return
}

// -----

// Tests that paged attention's key heads divide the query heads.
func.func @paged_attention_heads(%q: tensor<3x3x1x8xf32>, %k: tensor<9x2x4x8xf32>, %t: tensor<3x5xi32>, %p: tensor<3xi32>) {
  // expected-error @+2 {{'tfc.paged_attention' op key/value heads (2) must divide query heads (3)}}
  // expected-error @+1 {{'tfc.paged_attention' op failed to infer returned types}}
  %0 = tfc.paged_attention %q, %k, %k, %t, %p : (tensor<3x3x1x8xf32>, tensor<9x2x4x8xf32>, tensor<9x2x4x8xf32>, tensor<3x5xi32>, tensor<3xi32>) -> tensor<3x3x1x8xf32>
  return
}

// -----

// Tests that paged attention takes one position per row.
func.func @paged_attention_positions(%q: tensor<3x4x1x8xf32>, %k: tensor<9x2x4x8xf32>, %t: tensor<3x5xi32>, %p: tensor<2xi32>) {
  // expected-error @+2 {{'tfc.paged_attention' op operand 'position' must be [B] with B = 3 (one position per row), got [2]}}
  // expected-error @+1 {{'tfc.paged_attention' op failed to infer returned types}}
  %0 = tfc.paged_attention %q, %k, %k, %t, %p : (tensor<3x4x1x8xf32>, tensor<9x2x4x8xf32>, tensor<9x2x4x8xf32>, tensor<3x5xi32>, tensor<2xi32>) -> tensor<3x4x1x8xf32>
  return
}

// -----

// Tests that the value pool matches the key pool's blocks.
func.func @paged_attention_pools(%q: tensor<3x4x1x8xf32>, %k: tensor<9x2x4x8xf32>, %v: tensor<8x2x4x8xf32>, %t: tensor<3x5xi32>, %p: tensor<3xi32>) {
  // expected-error @+2 {{'tfc.paged_attention' op operand 'value_pool' [8, 2, 4, 8] does not match 'key_pool' [9, 2, 4, 8] in blocks, heads or block size}}
  // expected-error @+1 {{'tfc.paged_attention' op failed to infer returned types}}
  %0 = tfc.paged_attention %q, %k, %v, %t, %p : (tensor<3x4x1x8xf32>, tensor<9x2x4x8xf32>, tensor<8x2x4x8xf32>, tensor<3x5xi32>, tensor<3xi32>) -> tensor<3x4x1x8xf32>
  return
}
