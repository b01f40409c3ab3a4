// REQUIRES: cuda-target
// RUN: tfc %s --target=cuda --compile-to=llvm -o - | FileCheck %s

// Tests tfc-cuda-launch-kernels on a product kernel (tfc.cuda.library_product): its stub
// first offers the product to the runtime's library (tfc_kernels_device_matmul with a
// tfc_device_matmul_t on the stack: eight i32s, six i64s; A, B, C and a null bias) and
// launches the kernel only when the runtime declines (a non-zero result): a runtime
// without cuBLASLt, or a product it does not run, still gets the result. A pointwise
// kernel's stub launches at once.

// CHECK-LABEL: llvm.func internal @k0_matmul(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr)
// CHECK:         %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK:         %[[DESC:.*]] = llvm.alloca {{.*}} x !llvm.struct<(i32, i32, i32, i32, i32, i32, i32, i32, i64, i64, i64, i64, i64, i64)>
// CHECK:         %[[R:.*]] = llvm.call @tfc_kernels_device_matmul(%[[DESC]], %arg0, %arg1, %arg2, %[[NULL]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK:         %[[TAKEN:.*]] = llvm.icmp "eq" %[[R]], %{{.*}} : i32
// CHECK:         llvm.cond_br %[[TAKEN]], ^[[DONE:.*]], ^[[LAUNCH:.*]]
// CHECK:       ^[[LAUNCH]]:
// CHECK:         llvm.call @tfc_kernels_device_launch(
// CHECK-NEXT:    llvm.return
// CHECK:       ^[[DONE]]:
// CHECK-NEXT:    llvm.return
// CHECK-LABEL: llvm.func internal @k1_exp(
// CHECK-NOT:     tfc_kernels_device_matmul
// CHECK:         llvm.call @tfc_kernels_device_launch(
// CHECK-LABEL: llvm.func @f(

func.func @f(%a: tensor<64x32xbf16>, %b: tensor<32x48xbf16>) -> tensor<64x48xbf16> {
  %c = tfc.matmul %a, %b : tensor<64x32xbf16>, tensor<32x48xbf16> -> tensor<64x48xbf16>
  %e = tfc.exp %c : tensor<64x48xbf16>
  return %e : tensor<64x48xbf16>
}
