// RUN: tfc %s --emit=llvm -o %t.ll
// RUN: FileCheck %s < %t.ll

// Tests that a linear followed by leaky_relu (the encoder-decoder's
// feed-forward) is one call of the kernel library, whose epilogue applies the
// activation (code 4) with the op's alpha (0.2f here) to each output tile in
// cache, instead of a separate kernel over the linear's result; and that a
// residual add after it joins the same call.

// CHECK: declare void @tfc_k_linear_ex_f32(ptr, ptr, ptr, ptr, ptr, i64, i64, i64, i32, i32, float)
// CHECK: define internal {{.*}}@k0_fused(
// CHECK-NEXT: call void @tfc_k_linear_ex_f32(ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, ptr null, ptr %{{[0-9]+}}, i64 4, i64 16, i64 8, i32 0, i32 4, float 0x3FC99999A0000000)
// CHECK: define internal {{.*}}@k1_fused(
// CHECK-NEXT: call void @tfc_k_linear_ex_f32(ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, ptr null, ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, i64 4, i64 8, i64 16, i32 1, i32 4, float 0x3F847AE140000000)
// Two kernels in all: no separate leaky_relu kernel.
// CHECK-NOT: define internal {{.*}}@k2_
func.func @ffn(%x: tensor<4x8xf32> {tfc.name = "x"}, %w1: tensor<8x16xf32> {tfc.name = "w1"},
               %b1: tensor<16xf32> {tfc.name = "b1"}, %w2: tensor<8x16xf32> {tfc.name = "w2"})
    -> tensor<4x8xf32> {
  %l = tfc.linear %x, %w1 bias %b1 : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %h = tfc.leaky_relu %l alpha = 2.000000e-01 : tensor<4x16xf32>
  %l2 = tfc.linear %h, %w2 transpose_weight : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %a = tfc.leaky_relu %l2 alpha = 0.01 : tensor<4x8xf32>
  %y = tfc.add %a, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
