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
