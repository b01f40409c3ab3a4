// RUN: tfc %s --emit=llvm -O0 -o %t.O0.ll
// RUN: FileCheck %s < %t.O0.ll
// RUN: tfc %s --emit=llvm -o %t.O2.ll
// RUN: FileCheck %s --check-prefix=O2 < %t.O2.ll

// Tests that every tfc op lowers through the CPU pipeline to LLVM IR: one
// module whose entries together use each op at least once (16-bit floats and
// integer element types included). --emit=llvm needs no kernel library. At
// -O0 nothing is folded or inlined, so each op shows up as its own internal
// kernel; at -O2 LLVM inlines the kernels into the entries.

// CHECK-DAG: define internal void @k{{[0-9]+}}_embedding(
// CHECK-DAG: define internal void @k{{[0-9]+}}_iota(
// CHECK-DAG: define internal void @k{{[0-9]+}}_add(
// CHECK-DAG: define internal void @k{{[0-9]+}}_layer_norm(
// CHECK-DAG: define internal void @k{{[0-9]+}}_linear(
// CHECK-DAG: define internal void @k{{[0-9]+}}_slice(
// CHECK-DAG: define internal void @k{{[0-9]+}}_transpose(
// CHECK-DAG: define internal void @k{{[0-9]+}}_attention(
// CHECK-DAG: define internal void @k{{[0-9]+}}_matmul(
// CHECK-DAG: define internal void @k{{[0-9]+}}_gelu(
// CHECK-DAG: define internal void @k{{[0-9]+}}_softmax(
// CHECK-DAG: define internal void @k{{[0-9]+}}_log_softmax(
// CHECK-DAG: define internal void @k{{[0-9]+}}_argmax(
// CHECK-DAG: define internal void @k{{[0-9]+}}_rotary(
// CHECK-DAG: define internal void @k{{[0-9]+}}_kv_cache_update_write(
// CHECK-DAG: define internal void @k{{[0-9]+}}_paged_attention(
// CHECK-DAG: call void @tfc_k_paged_kv_write(
// CHECK-DAG: define internal void @k{{[0-9]+}}_dynamic_slice(
// CHECK-DAG: define internal void @k{{[0-9]+}}_rms_norm(
// CHECK-DAG: define internal void @k{{[0-9]+}}_sample(
// CHECK-DAG: define internal void @k{{[0-9]+}}_cross_entropy(
// CHECK-DAG: define internal void @k{{[0-9]+}}_sub(
// CHECK-DAG: define internal void @k{{[0-9]+}}_mul(
// CHECK-DAG: define internal void @k{{[0-9]+}}_div(
// CHECK-DAG: define internal void @k{{[0-9]+}}_max(
// CHECK-DAG: define internal void @k{{[0-9]+}}_min(
// CHECK-DAG: define internal void @k{{[0-9]+}}_pow(
// CHECK-DAG: define internal void @k{{[0-9]+}}_exp(
// CHECK-DAG: define internal void @k{{[0-9]+}}_log(
// CHECK-DAG: define internal void @k{{[0-9]+}}_sqrt(
// CHECK-DAG: define internal void @k{{[0-9]+}}_rsqrt(
// CHECK-DAG: define internal void @k{{[0-9]+}}_tanh(
// CHECK-DAG: define internal void @k{{[0-9]+}}_sin(
// CHECK-DAG: define internal void @k{{[0-9]+}}_cos(
// CHECK-DAG: define internal void @k{{[0-9]+}}_sigmoid(
// CHECK-DAG: define internal void @k{{[0-9]+}}_neg(
// CHECK-DAG: define internal void @k{{[0-9]+}}_abs(
// CHECK-DAG: define internal void @k{{[0-9]+}}_relu(
// CHECK-DAG: define internal void @k{{[0-9]+}}_silu(
// CHECK-DAG: define internal void @k{{[0-9]+}}_leaky_relu(
// CHECK-DAG: define internal void @k{{[0-9]+}}_dropout(
// CHECK-DAG: define internal void @k{{[0-9]+}}_reduce_sum(
// CHECK-DAG: define internal void @k{{[0-9]+}}_reduce_mean(
// CHECK-DAG: define internal void @k{{[0-9]+}}_reduce_max(
// CHECK-DAG: define internal void @k{{[0-9]+}}_cast(
// CHECK-DAG: define internal void @k{{[0-9]+}}_concat(
// CHECK-DAG: define internal void @k{{[0-9]+}}_broadcast_to(
// CHECK-DAG: declare void @tfc_kernels_error(ptr)
// CHECK-DAG: declare float @tfc_k_uniform(i64, i64)
// CHECK-DAG: call void @tfc_k_attention_f32(
// CHECK-DAG: call void @tfc_k_sample_f32(
// CHECK-DAG: call void @tfc_k_attention_rows_f32(
// CHECK-DAG: define void @tfc_entry_forward(
// CHECK-DAG: define void @tfc_entry_decode(
// CHECK-DAG: define void @tfc_entry_decode_rows(
// CHECK-DAG: define void @tfc_entry_loss(
// CHECK-DAG: define {{.*}}ptr @tfc_artifact_v6()

// O2-DAG: define void @tfc_entry_forward(
// O2-DAG: define void @tfc_entry_decode(
// O2-DAG: define void @tfc_entry_loss(
// O2-DAG: define {{.*}}ptr @tfc_artifact_v6()

tfc.param @wte : tensor<16x8xf32> = "normal(0.0, 0.02)"
tfc.param @wpe : tensor<4x8xf32> = "normal(0.0, 0.02)"
tfc.param @ln.weight : tensor<8xf32> = "ones"
tfc.param @ln.bias : tensor<8xf32> = "zeros"
tfc.param @w_qkv : tensor<8x24xf32> = "normal(0.0, 0.02)"
tfc.param @b_qkv : tensor<24xf32> = "zeros"
tfc.param @w_o : tensor<8x8xf32> = "normal(0.0, 0.02)"
tfc.state @kv.k : tensor<1x2x8x4xf32> = "zeros"
tfc.state @kv.v : tensor<1x2x8x4xf32> = "zeros"
tfc.state @step : tensor<i64> = "zeros"
tfc.state @rows.k : tensor<3x2x8x4xf32> = "zeros"
tfc.state @pool.k : tensor<10x2x2x4xf32> = "zeros"

// GPT-style forward: embedding, iota, layer_norm, linear, slices, reshapes,
// transposes, attention, matmul, gelu, softmax/log_softmax, argmax.
func.func @forward(%ids: tensor<1x4xi32> {tfc.name = "ids"})
    -> (tensor<1x4x16xf32>, tensor<1x4xi32>, tensor<1x4x16xf32>) {
  %wte = tfc.load @wte : tensor<16x8xf32>
  %wpe = tfc.load @wpe : tensor<4x8xf32>
  %tok = tfc.embedding %wte, %ids : tensor<16x8xf32>, tensor<1x4xi32> -> tensor<1x4x8xf32>
  %pos = tfc.iota dim = 1 : tensor<1x4xi64>
  %pe = tfc.embedding %wpe, %pos : tensor<4x8xf32>, tensor<1x4xi64> -> tensor<1x4x8xf32>
  %h = tfc.add %tok, %pe : tensor<1x4x8xf32>, tensor<1x4x8xf32> -> tensor<1x4x8xf32>
  %g = tfc.load @ln.weight : tensor<8xf32>
  %b = tfc.load @ln.bias : tensor<8xf32>
  %n = tfc.layer_norm %h weight %g bias %b eps = 1.0e-5 : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %w = tfc.load @w_qkv : tensor<8x24xf32>
  %bq = tfc.load @b_qkv : tensor<24xf32>
  %qkv = tfc.linear %n, %w bias %bq : (tensor<1x4x8xf32>, tensor<8x24xf32>, tensor<24xf32>) -> tensor<1x4x24xf32>
  %q = tfc.slice %qkv start = [0, 0, 0] limit = [1, 4, 8] stride = [1, 1, 1] : tensor<1x4x24xf32> -> tensor<1x4x8xf32>
  %k = tfc.slice %qkv start = [0, 0, 8] limit = [1, 4, 16] stride = [1, 1, 1] : tensor<1x4x24xf32> -> tensor<1x4x8xf32>
  %v = tfc.slice %qkv start = [0, 0, 16] limit = [1, 4, 24] stride = [1, 1, 1] : tensor<1x4x24xf32> -> tensor<1x4x8xf32>
  %q4 = tfc.reshape %q : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %k4 = tfc.reshape %k : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %v4 = tfc.reshape %v : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %qt = tfc.transpose %q4 perm = [0, 2, 1, 3] : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %kt = tfc.transpose %k4 perm = [0, 2, 1, 3] : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %vt = tfc.transpose %v4 perm = [0, 2, 1, 3] : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %a = tfc.attention %qt, %kt, %vt causal : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %at = tfc.transpose %a perm = [0, 2, 1, 3] : tensor<1x2x4x4xf32> -> tensor<1x4x2x4xf32>
  %a3 = tfc.reshape %at : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
  %wo = tfc.load @w_o : tensor<8x8xf32>
  %o = tfc.matmul %a3, %wo : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
  %act = tfc.gelu %o approximate = tanh : tensor<1x4x8xf32>
  %logits = tfc.linear %act, %wte transpose_weight : (tensor<1x4x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32>
  %p = tfc.softmax %logits dim = -1 : tensor<1x4x16xf32> -> tensor<1x4x16xf32>
  %lp = tfc.log_softmax %logits dim = 2 : tensor<1x4x16xf32> -> tensor<1x4x16xf32>
  %next = tfc.argmax %logits dim = -1 : tensor<1x4x16xf32> -> tensor<1x4xi32>
  return %p, %next, %lp : tensor<1x4x16xf32>, tensor<1x4xi32>, tensor<1x4x16xf32>
}

// Decode with a KV cache: kv_cache_update in place on state, rotary with a
// run-time offset, dynamic_slice, rms_norm, sample, a step counter.
func.func @decode(%x: tensor<1x2x1x4xf32> {tfc.name = "x"}, %pos: tensor<i32> {tfc.name = "pos"},
                  %logits: tensor<1x16xf32> {tfc.name = "logits"}, %t: tensor<f32> {tfc.name = "t"},
                  %topk: tensor<i32> {tfc.name = "top_k"}, %topp: tensor<f32> {tfc.name = "top_p"},
                  %seed: tensor<i64> {tfc.name = "seed"})
    -> (tensor<1x2x1x4xf32>, tensor<1xi32>, tensor<1x2x1x4xf32>) {
  %xr = tfc.rotary %x offset %pos theta = 1.0e4 : (tensor<1x2x1x4xf32>, tensor<i32>) -> tensor<1x2x1x4xf32>
  %kc = tfc.load @kv.k : tensor<1x2x8x4xf32>
  %kc2 = tfc.kv_cache_update %kc, %xr, %pos dim = 2 : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<i32>) -> tensor<1x2x8x4xf32>
  tfc.store %kc2, @kv.k : tensor<1x2x8x4xf32>
  %vc = tfc.load @kv.v : tensor<1x2x8x4xf32>
  %vc2 = tfc.kv_cache_update %vc, %x, %pos dim = -2 : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<i32>) -> tensor<1x2x8x4xf32>
  tfc.store %vc2, @kv.v : tensor<1x2x8x4xf32>
  %a = tfc.attention %xr, %kc2, %vc2 offset %pos causal : (tensor<1x2x1x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<i32>) -> tensor<1x2x1x4xf32>
  %last = tfc.dynamic_slice %vc2[%pos] dim = 2 : (tensor<1x2x8x4xf32>, tensor<i32>) -> tensor<1x2x1x4xf32>
  %r = tfc.rms_norm %last eps = 1.0e-6 : (tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  %sum = tfc.add %a, %r : tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32> -> tensor<1x2x1x4xf32>
  %ids = tfc.sample %logits, %t, %topk, %topp, %seed : (tensor<1x16xf32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i64>) -> tensor<1xi32>
  %s = tfc.load @step : tensor<i64>
  %one = tfc.constant dense<1> : tensor<i64>
  %s2 = tfc.add %s, %one : tensor<i64>, tensor<i64> -> tensor<i64>
  tfc.store %s2, @step : tensor<i64>
  return %sum, %ids, %xr : tensor<1x2x1x4xf32>, tensor<1xi32>, tensor<1x2x1x4xf32>
}

// Serving's decode: each row of the batch at its own position (1-d offsets
// and positions).
func.func @decode_rows(%x: tensor<3x2x1x4xf32> {tfc.name = "x"}, %pos: tensor<3xi32> {tfc.name = "pos"})
    -> tensor<3x2x1x4xf32> {
  %xr = tfc.rotary %x offset %pos theta = 1.0e4 : (tensor<3x2x1x4xf32>, tensor<3xi32>) -> tensor<3x2x1x4xf32>
  %kc = tfc.load @rows.k : tensor<3x2x8x4xf32>
  %kc2 = tfc.kv_cache_update %kc, %xr, %pos dim = 2 : (tensor<3x2x8x4xf32>, tensor<3x2x1x4xf32>, tensor<3xi32>) -> tensor<3x2x8x4xf32>
  tfc.store %kc2, @rows.k : tensor<3x2x8x4xf32>
  %a = tfc.attention %xr, %kc2, %kc2 offset %pos causal : (tensor<3x2x1x4xf32>, tensor<3x2x8x4xf32>, tensor<3x2x8x4xf32>, tensor<3xi32>) -> tensor<3x2x1x4xf32>
  return %a : tensor<3x2x1x4xf32>
}

// Loss and the remaining pointwise, reduction and shape ops.
func.func @loss(%logits: tensor<2x3x5xf32> {tfc.name = "logits"}, %targets: tensor<2x3xi64> {tfc.name = "targets"},
                %a: tensor<3x5xf32> {tfc.name = "a"}, %b: tensor<5xf32> {tfc.name = "b"},
                %i: tensor<3x5xi32> {tfc.name = "i"}, %h: tensor<3x5xbf16> {tfc.name = "h"},
                %f16: tensor<4x6xf16> {tfc.name = "f16"}, %seed: tensor<i64> {tfc.name = "seed"})
    -> (tensor<f32>, tensor<3x5xf32>, tensor<3xf32>, tensor<1x5xf32>, tensor<i32>, tensor<3x5xbf16>,
        tensor<6x5xf32>, tensor<2x3x5xf32>, tensor<4x6xf16>, tensor<4xf16>) {
  %ce = tfc.cross_entropy %logits, %targets ignore_index = -100 : tensor<2x3x5xf32>, tensor<2x3xi64> -> tensor<f32>
  %0 = tfc.add %a, %b : tensor<3x5xf32>, tensor<5xf32> -> tensor<3x5xf32>
  %1 = tfc.sub %0, %b : tensor<3x5xf32>, tensor<5xf32> -> tensor<3x5xf32>
  %2 = tfc.mul %1, %a : tensor<3x5xf32>, tensor<3x5xf32> -> tensor<3x5xf32>
  %3 = tfc.div %2, %b : tensor<3x5xf32>, tensor<5xf32> -> tensor<3x5xf32>
  %4 = tfc.max %3, %a : tensor<3x5xf32>, tensor<3x5xf32> -> tensor<3x5xf32>
  %5 = tfc.min %4, %a : tensor<3x5xf32>, tensor<3x5xf32> -> tensor<3x5xf32>
  %6 = tfc.pow %5, %b : tensor<3x5xf32>, tensor<5xf32> -> tensor<3x5xf32>
  %7 = tfc.exp %6 : tensor<3x5xf32>
  %8 = tfc.log %7 : tensor<3x5xf32>
  %9 = tfc.sqrt %8 : tensor<3x5xf32>
  %10 = tfc.rsqrt %9 : tensor<3x5xf32>
  %11 = tfc.tanh %10 : tensor<3x5xf32>
  %12 = tfc.sin %11 : tensor<3x5xf32>
  %13 = tfc.cos %12 : tensor<3x5xf32>
  %14 = tfc.sigmoid %13 : tensor<3x5xf32>
  %15 = tfc.neg %14 : tensor<3x5xf32>
  %16 = tfc.abs %15 : tensor<3x5xf32>
  %17 = tfc.relu %16 : tensor<3x5xf32>
  %18 = tfc.silu %17 : tensor<3x5xf32>
  %19 = tfc.gelu %18 approximate = none : tensor<3x5xf32>
  %20 = tfc.leaky_relu %19 alpha = 0.1 : tensor<3x5xf32>
  %21 = tfc.dropout %20, %seed rate = 0.1 : tensor<3x5xf32>, tensor<i64> -> tensor<3x5xf32>
  %sum = tfc.reduce_sum %21 dims = [1] : tensor<3x5xf32> -> tensor<3xf32>
  %mean = tfc.reduce_mean %21 dims = [0] keepdim : tensor<3x5xf32> -> tensor<1x5xf32>
  %imax = tfc.reduce_max %i dims = [0, 1] : tensor<3x5xi32> -> tensor<i32>
  %hc = tfc.cast %21 : tensor<3x5xf32> -> tensor<3x5xbf16>
  %hs = tfc.softmax %h dim = 0 : tensor<3x5xbf16> -> tensor<3x5xbf16>
  %hm = tfc.mul %hc, %hs : tensor<3x5xbf16>, tensor<3x5xbf16> -> tensor<3x5xbf16>
  %cat = tfc.concat %a, %21 dim = 0 : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<6x5xf32>
  %bc = tfc.broadcast_to %b : tensor<5xf32> -> tensor<2x3x5xf32>
  %ln = tfc.layer_norm %f16 eps = 1.0e-5 : (tensor<4x6xf16>) -> tensor<4x6xf16>
  %hmax = tfc.reduce_max %ln dims = [1] : tensor<4x6xf16> -> tensor<4xf16>
  return %ce, %21, %sum, %mean, %imax, %hm, %cat, %bc, %ln, %hmax
      : tensor<f32>, tensor<3x5xf32>, tensor<3xf32>, tensor<1x5xf32>, tensor<i32>, tensor<3x5xbf16>,
        tensor<6x5xf32>, tensor<2x3x5xf32>, tensor<4x6xf16>, tensor<4xf16>
}

// Serving's decode over a paged KV cache: the update written in place through
// the block table, attention read through it.
func.func @decode_paged(%x: tensor<3x2x1x4xf32> {tfc.name = "x"}, %pos: tensor<3xi32> {tfc.name = "pos"},
                        %blocks: tensor<3x4xi32> {tfc.name = "blocks"}) -> tensor<3x2x1x4xf32> {
  %kc = tfc.load @pool.k : tensor<10x2x2x4xf32>
  %kc2 = tfc.kv_cache_update %kc, %x, %pos blocks %blocks dim = 2 : (tensor<10x2x2x4xf32>, tensor<3x2x1x4xf32>, tensor<3xi32>, tensor<3x4xi32>) -> tensor<10x2x2x4xf32>
  tfc.store %kc2, @pool.k : tensor<10x2x2x4xf32>
  %a = tfc.paged_attention %x, %kc2, %kc2, %blocks, %pos : (tensor<3x2x1x4xf32>, tensor<10x2x2x4xf32>, tensor<10x2x2x4xf32>, tensor<3x4xi32>, tensor<3xi32>) -> tensor<3x2x1x4xf32>
  return %a : tensor<3x2x1x4xf32>
}
