// tfc --dp for CUDA artifacts: a collective is a call into the runtime's
// communicator made by the host code (the CPU target's tfc.all_reduce kernel,
// on device addresses), not a device kernel; its group name stays a host
// string (never uploaded through tfc_kernels_device_constant).
// REQUIRES: cuda-target
// RUN: rm -rf %t && tfc %s -o %t.so --target=cuda --optimizer=sgd --dp=2 --dump-ir=%t
// RUN: cat %t/*-tfc-cuda-launch-kernels.mlir | FileCheck %s
// CHECK-DAG: llvm.mlir.global internal constant @tfc_group_dp("dp\00")
// CHECK-DAG: llvm.func @tfc_kernels_collective_f32(i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64)
// CHECK: llvm.func internal @k{{[0-9]+}}_all_reduce(
// CHECK: %[[GROUP:[0-9]+]] = llvm.mlir.addressof @tfc_group_dp
// CHECK-NOT: tfc_kernels_device_
// CHECK: llvm.call @tfc_kernels_collective_f32(%{{[0-9]+}}, %{{[0-9]+}}, %[[GROUP]],

tfc.param @w : tensor<4x4xf32> = "normal(0.0, 1.0)"
func.func @loss(%x: tensor<2x4xf32>) -> tensor<f32> {
  %w = tfc.load @w : tensor<4x4xf32>
  %y = tfc.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %l = tfc.reduce_mean %y dims = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
