// REQUIRES: cuda-target
// RUN: tfc %s --target=cuda --compile-to=llvm -o - | FileCheck %s
// RUN: tfc %s --target=cuda -o %t.so && tfc-run %t.so info | FileCheck %s --check-prefix=INFO

// Tests tfc-cuda-launch-kernels: a kernel becomes a launch stub (its pointer
// arguments packed into a stack array; its launch shape, tfc_device_launch_t,
// into another: a 1-D grid of one 32-thread block for its 4 work items, no
// dynamic shared memory; kernel index, argument count), the plan's copies (a
// returned input, a returned constant) become device copies, and the
// constant's address the runtime's device copy of it. No load or store of
// device memory is left in the entry; the artifact records the device, its
// architecture and the kernels.

// CHECK: llvm.mlir.global private constant @f_cst0
// CHECK-LABEL: llvm.func internal @k0_exp(%arg0: !llvm.ptr, %arg1: !llvm.ptr)
// CHECK-DAG:     %[[NARGS:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-DAG:     %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-DAG:     %[[BLOCK:.*]] = llvm.mlir.constant(32 : i32) : i32
// CHECK-DAG:     %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK:         %[[ARGS:.*]] = llvm.alloca {{.*}} x !llvm.array<2 x ptr>
// CHECK:         llvm.store %arg0
// CHECK:         llvm.store %arg1
// CHECK:         %[[SHAPE:.*]] = llvm.alloca {{.*}} x !llvm.array<7 x i32>
// CHECK:         llvm.store %[[ONE]]
// CHECK:         llvm.store %[[ONE]]
// CHECK:         llvm.store %[[ONE]]
// CHECK:         llvm.store %[[BLOCK]]
// CHECK:         llvm.store %[[ONE]]
// CHECK:         llvm.store %[[ONE]]
// CHECK:         llvm.store %[[ZERO]]
// CHECK:         llvm.call @tfc_kernels_device_launch(%[[ZERO]], %[[SHAPE]], %[[ARGS]], %[[NARGS]])
// CHECK-NEXT:    llvm.return
// CHECK-LABEL: llvm.func @f(
// CHECK-NOT:     llvm.load
// CHECK-NOT:     llvm.store
// CHECK-NOT:     memcpy
// CHECK:         %[[HOST:.*]] = llvm.mlir.addressof @f_cst0
// CHECK:         %[[DEV:.*]] = llvm.call @tfc_kernels_device_constant(%[[HOST]], %{{.*}})
// CHECK:         llvm.call @tfc_kernels_device_copy(%arg3, %{{.*}}, %{{.*}})
// CHECK:         llvm.call @k0_exp(%arg0, %arg1)
// CHECK:         llvm.call @tfc_kernels_device_copy(%arg2, %arg0, %{{.*}})
// CHECK:         llvm.return

// INFO: device:    CUDA sm_90: 1 kernels

func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c = tfc.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %e = tfc.exp %x : tensor<4xf32>
  return %e, %x, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
