// RUN: tfc %s --emit=llvm -O0 -o %t.ll
// RUN: FileCheck %s < %t.ll

// Tests that a matmul whose rhs broadcasts over the leading batch dims (a
// weight per head [H, K, N] against [B, H, M, K] activations) passes the rhs
// to the kernel library as it is, with its period (the argument after its
// stride), instead of copying it once per batch item into a fresh buffer;
// a broadcast that no period expresses is still copied.

// CHECK-LABEL: define {{.*}}@k0_matmul(
// CHECK-NOT: call {{.*}}@malloc
// CHECK: call void @tfc_k_matmul_bx_f32(ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, i32 0, ptr %{{[0-9]+}}, i64 6, i64 16, i64 8, i64 8, i32 0, i32 0, i64 128, i64 64, i64 3, i64 128, i32 0)
// CHECK-NOT: call {{.*}}@malloc
// CHECK: ret void

// CHECK-LABEL: define {{.*}}@k1_matmul(
// CHECK: call {{.*}}@malloc
// CHECK: call void @tfc_k_matmul_f32(ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, i64 6, i64 16, i64 8, i64 8, i32 0, i32 0, i64 128, i64 64, i64 128, i32 0)

func.func @heads(%x: tensor<2x3x16x8xf32> {tfc.name = "x"}, %w: tensor<3x8x8xf32> {tfc.name = "w"},
                 %u: tensor<2x1x8x8xf32> {tfc.name = "u"})
    -> (tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32>) {
  %y = tfc.matmul %x, %w : tensor<2x3x16x8xf32>, tensor<3x8x8xf32> -> tensor<2x3x16x8xf32>
  %z = tfc.matmul %x, %u : tensor<2x3x16x8xf32>, tensor<2x1x8x8xf32> -> tensor<2x3x16x8xf32>
  return %y, %z : tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32>
}
