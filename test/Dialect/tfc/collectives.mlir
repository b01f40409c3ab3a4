// RUN: tfc-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// Tests that tfc.all_reduce parses and prints with its group, reduction and size.
// CHECK-LABEL: func.func @all_reduce
// CHECK: tfc.all_reduce %{{.*}} {group = "dp", reduce = "mean", size = 2 : i64} : tensor<4x8xf32>
// CHECK: tfc.all_reduce %{{.*}} {group = "tp", reduce = "sum", size = 4 : i64} : tensor<f32>
func.func @all_reduce(%x: tensor<4x8xf32>, %l: tensor<f32>) -> (tensor<4x8xf32>, tensor<f32>) {
  %0 = tfc.all_reduce %x {group = "dp", reduce = "mean", size = 2 : i64} : tensor<4x8xf32>
  %1 = tfc.all_reduce %l {group = "tp", reduce = "sum", size = 4 : i64} : tensor<f32>
  return %0, %1 : tensor<4x8xf32>, tensor<f32>
}

// -----

// Tests that the reduction is sum or mean.
func.func @bad_reduce(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.all_reduce' op reduce 'max' is not 'sum' or 'mean'}}
  %0 = tfc.all_reduce %x {group = "dp", reduce = "max", size = 2 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that the group has a name.
func.func @no_group(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.all_reduce' op needs a non-empty group name ("dp")}}
  %0 = tfc.all_reduce %x {group = "", reduce = "sum", size = 2 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that the group has at least one rank.
func.func @bad_size(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.all_reduce' op group size 0 must be at least 1}}
  %0 = tfc.all_reduce %x {group = "dp", reduce = "sum", size = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that only float tensors are reduced (token ids are not averaged).
func.func @int_operand(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'tfc.all_reduce' op operand #0 must be tensor of f32/bf16/f16}}
  %0 = tfc.all_reduce %x {group = "dp", reduce = "sum", size = 2 : i64} : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Tests that tfc.reduce_scatter divides and tfc.all_gather multiplies the
// leading dimension by the group's size.
// CHECK-LABEL: func.func @scatter_gather
// CHECK: tfc.reduce_scatter %{{.*}} {group = "dp", reduce = "mean", size = 2 : i64} : tensor<8x3xf32> -> tensor<4x3xf32>
// CHECK: tfc.all_gather %{{.*}} {group = "dp", size = 2 : i64} : tensor<4x3xf32> -> tensor<8x3xf32>
func.func @scatter_gather(%x: tensor<8x3xf32>) -> tensor<8x3xf32> {
  %0 = tfc.reduce_scatter %x {group = "dp", reduce = "mean", size = 2 : i64} : tensor<8x3xf32> -> tensor<4x3xf32>
  %1 = tfc.all_gather %0 {group = "dp", size = 2 : i64} : tensor<4x3xf32> -> tensor<8x3xf32>
  return %1 : tensor<8x3xf32>
}

// -----

// Tests that the scattered dimension must divide into the group's blocks.
func.func @scatter_indivisible(%x: tensor<10xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{'tfc.reduce_scatter' op leading dimension 10 of [10] is not divisible by the group size 4 (pad it to a multiple of 4)}}
  // expected-error @+1 {{'tfc.reduce_scatter' op failed to infer returned types}}
  %0 = tfc.reduce_scatter %x {group = "dp", reduce = "sum", size = 4 : i64} : tensor<10xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Tests that a 0-d tensor has nothing to scatter.
func.func @scatter_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+2 {{'tfc.reduce_scatter' op operand 'x' must have a leading dimension to scatter, got a 0-d tensor}}
  // expected-error @+1 {{'tfc.reduce_scatter' op failed to infer returned types}}
  %0 = tfc.reduce_scatter %x {group = "dp", reduce = "sum", size = 2 : i64} : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that the result type is the one the group's size gives.
func.func @gather_wrong_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{'tfc.all_gather' op inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'tfc.all_gather' op failed to infer returned types}}
  %0 = tfc.all_gather %x {group = "dp", size = 2 : i64} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests the reduction, the group name and the group size of reduce_scatter
// and all_gather.
func.func @scatter_bad_reduce(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'tfc.reduce_scatter' op reduce 'max' is not 'sum' or 'mean'}}
  %0 = tfc.reduce_scatter %x {group = "dp", reduce = "max", size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @gather_no_group(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tfc.all_gather' op needs a non-empty group name ("dp")}}
  %0 = tfc.all_gather %x {group = "", size = 2 : i64} : tensor<4xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @gather_bad_size(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.all_gather' op group size 0 must be at least 1}}
  %0 = tfc.all_gather %x {group = "dp", size = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that tfc.copy_to_group (Megatron's f) parses and prints with its group and size.
// CHECK-LABEL: func.func @copy_to_group
// CHECK: tfc.copy_to_group %{{.*}} {group = "tp", size = 2 : i64} : tensor<4x8xf32>
func.func @copy_to_group(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tfc.copy_to_group %x {group = "tp", size = 2 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @copy_no_group(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.copy_to_group' op needs a non-empty group name ("tp")}}
  %0 = tfc.copy_to_group %x {group = "", size = 2 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @copy_bad_size(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.copy_to_group' op group size 0 must be at least 1}}
  %0 = tfc.copy_to_group %x {group = "tp", size = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that a gradient bucket's start and wait parse and print: variadic
// tensors, the bucket number tying the pair.
// CHECK-LABEL: func.func @bucket
// CHECK: %[[P:.*]]:2 = tfc.all_reduce_start %{{.*}}, %{{.*}} {bucket = 3 : i64, group = "dp", reduce = "mean", size = 2 : i64} : tensor<f32>, tensor<4x8xf32> -> tensor<f32>, tensor<4x8xf32>
// CHECK: tfc.all_reduce_wait %[[P]]#0, %[[P]]#1 {bucket = 3 : i64} : tensor<f32>, tensor<4x8xf32> -> tensor<f32>, tensor<4x8xf32>
func.func @bucket(%l: tensor<f32>, %g: tensor<4x8xf32>) -> (tensor<f32>, tensor<4x8xf32>) {
  %p:2 = tfc.all_reduce_start %l, %g {bucket = 3 : i64, group = "dp", reduce = "mean", size = 2 : i64} : tensor<f32>, tensor<4x8xf32> -> tensor<f32>, tensor<4x8xf32>
  %r:2 = tfc.all_reduce_wait %p#0, %p#1 {bucket = 3 : i64} : tensor<f32>, tensor<4x8xf32> -> tensor<f32>, tensor<4x8xf32>
  return %r#0, %r#1 : tensor<f32>, tensor<4x8xf32>
}

// -----

// Tests that a bucket's results have its operands' types.
func.func @bucket_types(%g: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'tfc.all_reduce_start' op results must have the operands' types, in order}}
  %p = tfc.all_reduce_start %g {bucket = 0 : i64, group = "dp", reduce = "sum", size = 2 : i64} : tensor<4x8xf32> -> tensor<8x4xf32>
  return %p : tensor<8x4xf32>
}

// -----

// Tests that a bucket holds f32 only (the runtime's flat buffer is f32).
func.func @bucket_bf16(%g: tensor<4xbf16>) -> tensor<4xbf16> {
  // expected-error @+1 {{'tfc.all_reduce_start' op operand #0 must be variadic of tensor of f32}}
  %p = tfc.all_reduce_start %g {bucket = 0 : i64, group = "dp", reduce = "sum", size = 2 : i64} : tensor<4xbf16> -> tensor<4xbf16>
  return %p : tensor<4xbf16>
}

// -----

// Tests that a bucket has a reduction the runtime knows.
func.func @bucket_reduce(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.all_reduce_start' op reduce 'max' is not 'sum' or 'mean'}}
  %p = tfc.all_reduce_start %g {bucket = 0 : i64, group = "dp", reduce = "max", size = 2 : i64} : tensor<4xf32> -> tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

// Tests that a wait is not empty.
func.func @bucket_wait_empty() {
  // expected-error @+1 {{'tfc.all_reduce_wait' op needs at least one tensor}}
  "tfc.all_reduce_wait"() {bucket = 0 : i64} : () -> ()
  return
}

// -----

// Tests that tfc.all_to_all keeps the operand's type (each rank sends one
// block of the leading dimension to every rank).
// CHECK-LABEL: func.func @all_to_all
// CHECK: tfc.all_to_all %{{.*}} {group = "ep", size = 4 : i64} : tensor<8x3xf32>
func.func @all_to_all(%x: tensor<8x3xf32>) -> tensor<8x3xf32> {
  %0 = tfc.all_to_all %x {group = "ep", size = 4 : i64} : tensor<8x3xf32>
  return %0 : tensor<8x3xf32>
}

// -----

// Tests that the exchanged dimension must divide into one block per rank.
func.func @all_to_all_indivisible(%x: tensor<6x3xf32>) -> tensor<6x3xf32> {
  // expected-error @+1 {{'tfc.all_to_all' op leading dimension 6 of [6, 3] is not divisible by the group size 4 (pad it to a multiple of 4)}}
  %0 = tfc.all_to_all %x {group = "ep", size = 4 : i64} : tensor<6x3xf32>
  return %0 : tensor<6x3xf32>
}

// -----

// Tests that a 0-d tensor has no blocks to exchange.
func.func @all_to_all_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.all_to_all' op operand 'x' must have a leading dimension to scatter, got a 0-d tensor}}
  %0 = tfc.all_to_all %x {group = "ep", size = 2 : i64} : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests that tfc.all_to_all names its group.
func.func @all_to_all_no_group(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfc.all_to_all' op needs a non-empty group name ("ep")}}
  %0 = tfc.all_to_all %x {group = "", size = 2 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
