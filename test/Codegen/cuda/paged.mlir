// REQUIRES: cuda-target
// RUN: tfc-opt %s --tfc-lower-to-kernels=target=cuda --tfc-cuda-emit-kernels | FileCheck %s
// RUN: tfc %s --target=cuda -o %t.so
// RUN: nm %t.so | FileCheck %s --check-prefix=HOST

// Tests the CUDA kernels of a paged KV cache (--set kv_block): the cache
// update writes the pool in place through the block table
// (tfc_paged_kv_write), and paged attention is the decode kernel reading the
// pools through the table (a block per query row and chunk of 128 of the
// table's M * S = 8 keys), the rows' positions as its row offsets. And that
// the whole module compiles to an artifact whose host code takes from the CPU
// kernel library (an archive: members only as referenced) its host-call shims
// alone, none of its kernels (tfc_k_*: the AVX code).

// HOST-NOT: tfc_k_
// HOST: T tfc_artifact_v
// HOST-NOT: tfc_k_

// CHECK-LABEL: func.func private @{{.*}}kv_cache_update_write(memref<3x2x1x4xf32>, memref<3xi32>, memref<3x4xi32>, memref<10x2x2x4xf32>)
// CHECK-SAME:    tfc_paged_kv_write(out0, in0, 3LL, 2LL, 1LL, 4LL, (const int*)in1, tfc_kv_pages{(const int*)in2, 2LL, 4LL, 10LL});
// CHECK-SAME:    tfc.cuda.threads = 24 : i64

// CHECK-LABEL: func.func private @{{.*}}paged_attention(memref<3x2x1x4xf32>, memref<10x2x2x4xf32>, memref<10x2x2x4xf32>, memref<3x4xi32>, memref<3xi32>, memref<3x2x1x4xf32>)
// CHECK-SAME:    tfc.cuda.launch = array<i64: 6, 1, 1, 128, 1, 1, 0>
// CHECK-SAME:    __device__ float {{.*}}_partial[36];
// CHECK-SAME:    tfc_attention_decode<4, 4, true>(in0, in1, in2, out0, 2LL, 2LL, 1LL, 8LL, 0LL, 5.0{{0*}}e-01f
// CHECK-SAME:    (const int*)in4, tfc_kv_pages{(const int*)in3, 2LL, 4LL, 10LL});

tfc.state @pool.k : tensor<10x2x2x4xf32> = "zeros"
func.func @decode_rows(%x: tensor<3x2x1x4xf32> {tfc.name = "x"}, %pos: tensor<3xi32> {tfc.name = "pos"},
                       %blocks: tensor<3x4xi32> {tfc.name = "blocks"}) -> tensor<3x2x1x4xf32> {
  %kc = tfc.load @pool.k : tensor<10x2x2x4xf32>
  %kc2 = tfc.kv_cache_update %kc, %x, %pos blocks %blocks dim = 2 : (tensor<10x2x2x4xf32>, tensor<3x2x1x4xf32>, tensor<3xi32>, tensor<3x4xi32>) -> tensor<10x2x2x4xf32>
  tfc.store %kc2, @pool.k : tensor<10x2x2x4xf32>
  %a = tfc.paged_attention %x, %kc2, %kc2, %blocks, %pos : (tensor<3x2x1x4xf32>, tensor<10x2x2x4xf32>, tensor<10x2x2x4xf32>, tensor<3x4xi32>, tensor<3xi32>) -> tensor<3x2x1x4xf32>
  return %a : tensor<3x2x1x4xf32>
}
