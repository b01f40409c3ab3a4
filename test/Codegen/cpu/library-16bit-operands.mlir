// RUN: tfc %s --emit=llvm -O0 -o %t.ll
// RUN: FileCheck %s < %t.ll

// Tests that 16-bit weights, matmul right-hand sides and KV caches reach the
// kernel library as they are, with their element type (1 bf16, 2 f16), instead
// of being widened into f32 buffers around every call: the library widens them
// as it reads them (codegen/cpu/LibraryKernels.cpp). 16-bit activations are
// still widened (a linalg.generic kernel), and f32 operands keep the f32 entry
// points.

// CHECK-DAG: call void @tfc_k_linear_ex_bx_f32(ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, i32 1,
// CHECK-DAG: call void @tfc_k_linear_ex_bx_f32(ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, i32 2,
// CHECK-DAG: call void @tfc_k_matmul_bx_f32(ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, i32 1,
// CHECK-DAG: call void @tfc_k_attention_kvx_f32(ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, ptr %{{[0-9]+}}, i32 1,
// CHECK-DAG: call void @tfc_k_linear_ex_f32(
// CHECK-DAG: call void @tfc_k_matmul_f32(
// CHECK-DAG: call void @tfc_k_attention_f32(

func.func @half(%x: tensor<2x8xbf16> {tfc.name = "x"}, %w: tensor<8x16xbf16> {tfc.name = "w"},
                %xh: tensor<2x8xf16> {tfc.name = "xh"}, %wh: tensor<16x8xf16> {tfc.name = "wh"},
                %q: tensor<1x2x1x4xbf16> {tfc.name = "q"}, %k: tensor<1x2x8x4xbf16> {tfc.name = "k"},
                %v: tensor<1x2x8x4xbf16> {tfc.name = "v"})
    -> (tensor<2x16xbf16>, tensor<2x16xf16>, tensor<2x16xbf16>, tensor<1x2x1x4xbf16>) {
  %y = tfc.linear %x, %w : (tensor<2x8xbf16>, tensor<8x16xbf16>) -> tensor<2x16xbf16>
  %yh = tfc.linear %xh, %wh transpose_weight : (tensor<2x8xf16>, tensor<16x8xf16>) -> tensor<2x16xf16>
  %m = tfc.matmul %x, %w : tensor<2x8xbf16>, tensor<8x16xbf16> -> tensor<2x16xbf16>
  %a = tfc.attention %q, %k, %v causal : (tensor<1x2x1x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>) -> tensor<1x2x1x4xbf16>
  return %y, %yh, %m, %a : tensor<2x16xbf16>, tensor<2x16xf16>, tensor<2x16xbf16>, tensor<1x2x1x4xbf16>
}

func.func @full(%x: tensor<2x8xf32> {tfc.name = "x"}, %w: tensor<8x16xf32> {tfc.name = "w"},
                %q: tensor<1x2x1x4xf32> {tfc.name = "q"}, %k: tensor<1x2x8x4xf32> {tfc.name = "k"},
                %v: tensor<1x2x8x4xf32> {tfc.name = "v"})
    -> (tensor<2x16xf32>, tensor<2x16xf32>, tensor<1x2x1x4xf32>) {
  %y = tfc.linear %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %m = tfc.matmul %x, %w : tensor<2x8xf32>, tensor<8x16xf32> -> tensor<2x16xf32>
  %a = tfc.attention %q, %k, %v causal : (tensor<1x2x1x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x1x4xf32>
  return %y, %m, %a : tensor<2x16xf32>, tensor<2x16xf32>, tensor<1x2x1x4xf32>
}
