// tfc-kernels-bench: GFLOP/s of the CPU kernels on GPT-2 124M shapes, with 1 and 2
// threads (a spinning std::thread pool stands in for the runtime's host). Prints the
// median of several timed runs after one warm-up run; products also with bf16 B, and a
// whole batch-1 decode pass (f32 vs bf16 weights) against a STREAM triad. Not run by ctest.
//
//   tfc-kernels-bench [--threads 1,2] [--min-time 0.3] [--filter SUBSTR] [--isa avx512]
//                     [--cold-weights]   (B read from memory each call, not from L3)
//                     [--huge-pages]     (the decode pass on 2 MiB pages)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "internal.h"
#include "tfc_kernels.h"

namespace {

// A pool of n-1 spinning workers plus the caller; parts are handed out dynamically in
// chunks of `grain` through an atomic counter.
class Pool {
 public:
  explicit Pool(int n) : n_(n) {
    api_.struct_size = sizeof(tfc_host_api_t);
    api_.user = this;
    api_.parallel_for = &Pool::pfor;
    api_.report_error = [](void*, const char* m) { fprintf(stderr, "error: %s\n", m); };
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { loop(); });
  }
  ~Pool() {
    stop_ = true;
    gen_.fetch_add(1);
    for (auto& t : workers_) t.join();
  }
  const tfc_host_api_t* api() const { return &api_; }

 private:
  static void pfor(void* user, int64_t n, int64_t grain, void (*fn)(void*, int64_t, int64_t),
                   void* ctx) {
    Pool* p = static_cast<Pool*>(user);
    p->fn_ = fn;
    p->ctx_ = ctx;
    p->n_items_ = n;
    p->grain_ = std::max<int64_t>(1, std::min<int64_t>(grain, n / (4 * p->n_) + 1));
    p->next_.store(0);
    p->done_.store(0);
    p->gen_.fetch_add(1, std::memory_order_release);
    p->work();
    for (int spins = 0; p->done_.load(std::memory_order_acquire) < p->n_ - 1; ++spins) {
      if (spins > 2000) std::this_thread::yield();  // the machine may be oversubscribed
    }
  }
  void work() {
    for (;;) {
      int64_t b = next_.fetch_add(grain_);
      if (b >= n_items_) break;
      fn_(ctx_, b, std::min(n_items_, b + grain_));
    }
  }
  void loop() {
    uint64_t seen = 0;  // the generation at construction: no call is missed
    for (;;) {
      uint64_t g;
      for (int spins = 0; (g = gen_.load(std::memory_order_acquire)) == seen; ++spins) {
        if (spins > 20000) {
          std::this_thread::yield();  // spin ~ tens of microseconds, then give the core up
        } else {
#if defined(__x86_64__)
          __builtin_ia32_pause();
#endif
        }
      }
      seen = g;
      if (stop_) return;
      work();
      done_.fetch_add(1, std::memory_order_release);
    }
  }
  int n_;
  tfc_host_api_t api_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<int64_t> next_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> stop_{false};
  void (*fn_)(void*, int64_t, int64_t) = nullptr;
  void* ctx_ = nullptr;
  int64_t n_items_ = 0, grain_ = 1;
};

double min_time = 0.3;
bool cold_weights = false;
bool huge_pages = false;

// With --huge-pages the decode pass's weights and triad arrays start on 2 MiB boundaries and
// are advised to use transparent huge pages, as the runtime's buffers are
// (runtime/src/core/runtime_util.cpp): the two page sizes compared in separate processes.
template <class T>
struct PageAlloc {
  using value_type = T;
  PageAlloc() = default;
  template <class U>
  PageAlloc(const PageAlloc<U>&) {}
  T* allocate(size_t n) {
    void* p = nullptr;
    const size_t bytes = n * sizeof(T);
    if (posix_memalign(&p, huge_pages ? (2u << 20) : 64, bytes ? bytes : 1) != 0) abort();
    if (huge_pages) (void)madvise(p, bytes, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { free(p); }
  template <class U>
  bool operator==(const PageAlloc<U>&) const { return true; }
  template <class U>
  bool operator!=(const PageAlloc<U>&) const { return false; }
};
template <class T>
using PageVec = std::vector<T, PageAlloc<T>>;

double g_best = 0;  // the fastest run of the last median_seconds call
double g_cpu = 0;   // median process CPU seconds per run (robust to a loaded machine)

double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

double median_seconds(const std::function<void()>& f) {
  f();  // warm-up
  std::vector<double> t, c;
  double total = 0;
  while ((total < min_time || t.size() < 5) && t.size() < 200) {
    auto t0 = std::chrono::steady_clock::now();
    double c0 = cpu_now();
    f();
    c.push_back(cpu_now() - c0);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t.push_back(s);
    total += s;
  }
  std::sort(t.begin(), t.end());
  g_best = t[0];
  std::sort(c.begin(), c.end());
  g_cpu = c[c.size() / 2];
  return t[t.size() / 2];
}

std::vector<float> rnd(size_t n, uint64_t seed) {
  std::mt19937_64 r(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(r);
  return v;
}

// y = gelu_tanh(y), a separate elementwise pass (scalar tanhf), split over the host.
void gelu_pass(void* ctx, int64_t begin, int64_t end) {
  float* y = static_cast<float*>(ctx);
  for (int64_t i = begin; i < end; ++i) {
    const float x = y[i];
    y[i] = 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
  }
}

struct MM {
  const char* name;
  int64_t m, n, k;
  bool tb;
  bool ta = false;
  int64_t batch = 1;  // > 1: a batch of dense matrices (A, B and C each batch x one matrix)
};

// STREAM triad a = b + s c over the host's threads (one part per 64 Ki floats).
struct Triad {
  float *a, *b, *c;
};
void triad_part(void* ctx, int64_t begin, int64_t end) {
  const Triad& t = *static_cast<const Triad*>(ctx);
  for (int64_t i = begin * 65536; i < end * 65536; ++i) t.a[i] = t.b[i] + 3.f * t.c[i];
}

// Batch-1 decode of GPT-2 124M, its products only: per token the four linears of 12
// layers (each its own weights, so nothing stays in cache) and the tied lm_head, with f32
// and with bf16 weights, and a STREAM triad, in alternating rounds on the same threads (a
// loaded machine slows all three alike). The floor is the weights' bytes / the triad's
// bandwidth; bf16 should take about half the f32 time.
void decode_pass(const std::vector<int>& threads, const std::string& filter) {
  const char* name = "decode pass gpt2-124m";
  if (!filter.empty() && std::string(name).find(filter) == std::string::npos) return;
  struct Lin {
    int64_t n, k;
    bool tb;
  };
  std::vector<Lin> lins;
  for (int l = 0; l < 12; ++l) {
    lins.push_back({2304, 768, false});
    lins.push_back({768, 768, false});
    lins.push_back({3072, 768, false});
    lins.push_back({768, 3072, false});
  }
  lins.push_back({50257, 768, true});
  std::vector<PageVec<float>> w32;
  std::vector<PageVec<uint16_t>> w16;
  double bytes32 = 0;
  uint32_t state = 12345;
  for (const Lin& l : lins) {
    PageVec<float> w((size_t)(l.n * l.k));
    PageVec<uint16_t> h(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      state = state * 1664525u + 1013904223u;
      w[i] = ((int32_t)(state >> 8) - (1 << 23)) * (0.02f / (1 << 23));
      uint32_t u;
      memcpy(&u, &w[i], 4);
      h[i] = (uint16_t)(u >> 16);
    }
    bytes32 += 4.0 * w.size();
    w32.push_back(std::move(w));
    w16.push_back(std::move(h));
  }
  auto x = rnd(3072, 7);
  std::vector<float> y(50257);
  const int64_t tn = 16 << 20;  // triad arrays of 64 MiB
  PageVec<float> ta(tn), tb(tn), tc(tn);
  {
    const auto b = rnd(tn, 8), c = rnd(tn, 9);
    std::copy(b.begin(), b.end(), tb.begin());
    std::copy(c.begin(), c.end(), tc.begin());
  }
  Triad tr{ta.data(), tb.data(), tc.data()};
  printf("%-36s %8s %10s %10s %10s %8s %8s %10s\n", name, "threads", "f32 ms", "bf16 ms",
         "f32/bf16", "f32 GB/s", "bf16 GB/s", "triad GB/s");
  for (int t : threads) {
    Pool pool(t);
    tfc_kernels_set_host(t > 1 ? pool.api() : nullptr);
    auto pass = [&](int bt) {
      auto t0 = std::chrono::steady_clock::now();
      for (size_t i = 0; i < lins.size(); ++i) {
        const void* w = bt ? (const void*)w16[i].data() : (const void*)w32[i].data();
        tfc_k_linear_ex_bx_f32(x.data(), w, bt, nullptr, nullptr, y.data(), 1, lins[i].n,
                               lins[i].k, lins[i].tb, 0, 0.f);
      }
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    std::vector<double> f, h, s;
    pass(0);
    pass(1);
    for (int r = 0; r < 9; ++r) {
      f.push_back(pass(0));
      h.push_back(pass(1));
      auto t0 = std::chrono::steady_clock::now();
      tfc_kernels_parallel_for(tn / 65536, 1, triad_part, &tr);
      s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    tfc_kernels_set_host(nullptr);
    for (auto* v : {&f, &h, &s}) std::sort(v->begin(), v->end());
    const double mf = f[f.size() / 2], mh = h[h.size() / 2], ms = s[s.size() / 2];
    const double triad = 12.0 * tn / ms;  // bytes/s: read b, c, write a
    printf("%-36s %8d %10.2f %10.2f %10.2f %8.1f %8.1f %10.1f\n", "", t, mf * 1e3, mh * 1e3,
           mf / mh, bytes32 / mf * 1e-9, bytes32 / 2 / mh * 1e-9, triad * 1e-9);
    printf("%-36s %8s  floor (weights / triad): f32 %.2f ms (%.0f%% reached), bf16 %.2f ms "
           "(%.0f%%)\n",
           "", "", bytes32 / triad * 1e3, 100.0 * bytes32 / triad / mf, bytes32 / 2 / triad * 1e3,
           100.0 * bytes32 / 2 / triad / mh);
    fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads = {1, 2};
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads.clear();
      for (char* s = strtok(argv[++i], ","); s; s = strtok(nullptr, ",")) threads.push_back(atoi(s));
    } else if (!strcmp(argv[i], "--min-time") && i + 1 < argc) {
      min_time = atof(argv[++i]);
    } else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
      filter = argv[++i];
    } else if (!strcmp(argv[i], "--cold-weights")) {
      cold_weights = true;
    } else if (!strcmp(argv[i], "--huge-pages")) {
      huge_pages = true;
    } else if (!strcmp(argv[i], "--isa") && i + 1 < argc) {
      if (!tfc_kernels_internal_set_isa(argv[++i])) {
        fprintf(stderr, "ISA %s not available\n", argv[i]);
        return 1;
      }
    } else {
      fprintf(stderr, "usage: %s [--threads 1,2] [--min-time S] [--filter S] [--isa NAME]"
                      " [--cold-weights] [--huge-pages]\n",
              argv[0]);
      return 2;
    }
  }
  const tfc_kern::IsaKernels& isa = tfc_kern::isa();
  printf("# tfc-kernels-bench: isa=%s microkernel %dx%d KC=%d, median of runs >= %.2fs\n",
         isa.name, isa.mr, isa.nr, isa.kc, min_time);
  const MM mms[] = {
      {"qkv    [256x768]@[768x2304]", 256, 2304, 768, false},
      {"attn_o [256x768]@[768x768]", 256, 768, 768, false},
      {"mlp_up [256x768]@[768x3072]", 256, 3072, 768, false},
      {"mlp_dn [256x3072]@[3072x768]", 256, 768, 3072, false},
      {"lm_head [256x768]@[768x50257]^T", 256, 50257, 768, true},
      // gpt2-124m prefill of 128 tokens (the fused linears of `tfc-run ... profile prefill`)
      {"pf qkv    [128x768]@[768x2304]", 128, 2304, 768, false},
      {"pf attn_o [128x768]@[768x768]", 128, 768, 768, false},
      {"pf mlp_up [128x768]@[768x3072]", 128, 3072, 768, false},
      {"pf mlp_dn [128x3072]@[3072x768]", 128, 768, 3072, false},
      // the seed experiment's encoder-decoder (d_model 32, d_ff 128): small K and N, where
      // packing and per-call overhead dominate
      {"seed ed [1024x32]@[32x32]", 1024, 32, 32, false},
      {"seed ed [1024x32]@[32x128]", 1024, 128, 32, false},
      {"seed ed [1024x128]@[128x32]", 1024, 32, 128, false},
      // its train_step's products as tfc_k_matmul_f32 sees them: per-head projections and
      // their gradients in batches of 256 (64 sequences x 4 heads), the weight gradients
      // X^T dY over 1088 (64 x 17) rows, the 17-token decoder's linears
      {"seed b256 [16x8]@[8x8]", 16, 8, 8, false, false, 256},
      {"seed b256 [17x8]@[8x8]", 17, 8, 8, false, false, 256},
      {"seed b256 [16x8]@[8x8]^T", 16, 8, 8, true, false, 256},
      {"seed b256 [16x8]^T@[16x8]", 8, 8, 16, false, true, 256},
      {"seed b256 [17x8]^T@[17x8]", 8, 8, 17, false, true, 256},
      {"seed [1088x128]^T@[1088x32]", 128, 32, 1088, false, true},
      {"seed [1088x32]^T@[1088x128]", 32, 128, 1088, false, true},
      {"seed [1024x32]^T@[1024x32]", 32, 32, 1024, false, true},
      {"seed [1088x32]^T@[1088x12]", 32, 12, 1088, false, true},
      {"seed ed [1088x32]@[32x128]", 1088, 128, 32, false},
      {"seed ed [1088x128]@[128x32]", 1088, 32, 128, false},
      {"seed ed [1088x32]@[32x12]", 1088, 12, 32, false},
      {"seed ed [1088x128]@[32x128]^T", 1088, 32, 128, true},
      {"dec qkv [1x768]@[768x2304]", 1, 2304, 768, false},
      {"dec attn_o [1x768]@[768x768]", 1, 768, 768, false},
      {"dec mlp_up [1x768]@[768x3072]", 1, 3072, 768, false},
      {"dec mlp_dn [1x3072]@[3072x768]", 1, 768, 3072, false},
      {"dec lm_head [1x768]@[768x50257]^T", 1, 50257, 768, true},
  };
  printf("%-36s %8s %10s %10s %8s %10s %10s\n", "matmul", "threads", "ms", "GFLOP/s", "GB/s",
         "best GF/s", "cpu GF/s");
  // Each shape with f32 B, then B as bf16 (weights read as 16 bits; GB/s counts the bytes
  // read and written, so batch-1 decode's figure compares with the STREAM bandwidth).
  for (const MM& s : mms) {
    if (!filter.empty() && std::string(s.name).find(filter) == std::string::npos) continue;
    auto A = rnd((size_t)(s.batch * s.m * s.k), 1), B = rnd((size_t)(s.batch * s.k * s.n), 2);
    std::vector<uint16_t> B16(B.size());
    for (size_t i = 0; i < B.size(); ++i) {
      uint32_t u;
      memcpy(&u, &B[i], 4);
      B16[i] = (uint16_t)(u >> 16);
    }
    std::vector<float> C((size_t)(s.batch * s.m * s.n));
    // --cold-weights: copies of B cycled through, together 3x the L3 size, so that each
    // call reads its weights from memory as a model's layers do.
    const size_t copies =
        cold_weights ? std::max<size_t>(1, (96u << 20) / (B.size() * sizeof(float)) + 1) : 1;
    std::vector<float> Bc(copies * B.size());
    std::vector<uint16_t> B16c(copies * B16.size());
    for (size_t c = 0; c < copies; ++c) {
      std::copy(B.begin(), B.end(), Bc.begin() + c * B.size());
      std::copy(B16.begin(), B16.end(), B16c.begin() + c * B16.size());
    }
    for (int bt : {TFC_K_F32, TFC_K_BF16}) {
      const std::string name = std::string(s.name) + (bt == TFC_K_F32 ? "" : " bf16");
      for (int t : threads) {
        Pool pool(t);
        tfc_kernels_set_host(t > 1 ? pool.api() : nullptr);
        size_t call = 0;
        double sec = median_seconds([&] {
          const size_t c = call++ % copies;
          const void* bp = bt == TFC_K_F32 ? (const void*)(Bc.data() + c * B.size())
                                           : (const void*)(B16c.data() + c * B16.size());
          tfc_k_matmul_bx_f32(A.data(), bp, bt, C.data(), s.batch, s.m, s.n, s.k, s.ta, s.tb,
                              s.m * s.k, s.k * s.n, 0, s.m * s.n, 0);
        });
        tfc_kernels_set_host(nullptr);
        double flops = 2.0 * s.batch * s.m * s.n * s.k;
        double bytes = s.batch * (4.0 * (s.m * s.k + s.m * s.n) +
                                  (bt == TFC_K_F32 ? 4.0 : 2.0) * s.k * s.n);
        printf("%-36s %8d %10.3f %10.1f %8.1f %10.1f %10.1f\n", name.c_str(), t, sec * 1e3,
               flops / sec * 1e-9, bytes / sec * 1e-9, flops / g_best * 1e-9,
               flops / (g_cpu / t) * 1e-9);
        fflush(stdout);
      }
    }
  }
  // Fused epilogue: linear then a separate gelu pass, vs linear_ex with gelu applied to
  // each tile in cache (and plain linear, for the epilogue's own cost).
  const char* fname = "linear gelu [256x768]@[768x3072]";
  if (filter.empty() || std::string(fname).find(filter) != std::string::npos) {
    const int64_t m = 256, n = 3072, k = 768;
    auto X = rnd((size_t)(m * k), 6), W = rnd((size_t)(k * n), 7), Bv = rnd((size_t)n, 8);
    std::vector<float> Y((size_t)(m * n));
    printf("%-36s %8s %10s %10s %10s %10s\n", "linear + gelu (ms)", "threads", "linear",
           "lin+pass", "linear_ex", "saved");
    for (int t : threads) {
      Pool pool(t);
      tfc_kernels_set_host(t > 1 ? pool.api() : nullptr);
      const double lin = median_seconds([&] {
        tfc_k_linear_f32(X.data(), W.data(), Bv.data(), Y.data(), m, n, k, 0);
      });
      const double sep = median_seconds([&] {
        tfc_k_linear_f32(X.data(), W.data(), Bv.data(), Y.data(), m, n, k, 0);
        tfc_kern::parallel_for(m * n, 16384, gelu_pass, Y.data());
      });
      const double fused = median_seconds([&] {
        tfc_k_linear_ex_f32(X.data(), W.data(), Bv.data(), nullptr, Y.data(), m, n, k, 0, 1,
                            0.f);
      });
      tfc_kernels_set_host(nullptr);
      printf("%-36s %8d %10.3f %10.3f %10.3f %9.1f%%\n", fname, t, lin * 1e3, sep * 1e3,
             fused * 1e3, 100.0 * (sep - fused) / sep);
      fflush(stdout);
    }
  }
  struct AT {
    const char* name;
    int64_t b, h, t, d;
    bool causal;
  };
  const AT ats[] = {{"attn B4 H12 T64 D64 causal", 4, 12, 64, 64, true},
                    {"attn B4 H12 T1024 D64 causal", 4, 12, 1024, 64, true},
                    {"attn B4 H12 T1024 D64 full", 4, 12, 1024, 64, false},
                    // the seed experiment's encoder-decoder (issue 14)
                    {"attn B64 H4 T16 D8 full", 64, 4, 16, 8, false},
                    {"attn B64 H4 T17 D8 causal", 64, 4, 17, 8, true}};
  printf("%-36s %8s %10s %10s %8s %10s %10s\n", "attention", "threads", "ms", "GFLOP/s", "",
         "best GF/s", "cpu GF/s");
  for (const AT& a : ats) {
    if (!filter.empty() && std::string(a.name).find(filter) == std::string::npos) continue;
    size_t n = (size_t)(a.b * a.h * a.t * a.d);
    auto q = rnd(n, 3), k = rnd(n, 4), v = rnd(n, 5);
    std::vector<float> o(n);
    for (int t : threads) {
      Pool pool(t);
      tfc_kernels_set_host(t > 1 ? pool.api() : nullptr);
      double sec = median_seconds([&] {
        tfc_k_attention_f32(q.data(), k.data(), v.data(), o.data(), a.b, a.h, a.h, a.t, a.t, a.d,
                            a.d, a.causal, 0, 1.f / sqrtf((float)a.d));
      });
      tfc_kernels_set_host(nullptr);
      double pairs = a.causal ? a.t * (a.t + 1) / 2.0 : (double)a.t * a.t;
      double flops = 4.0 * a.b * a.h * pairs * a.d;  // QK^T and PV, multiply-add = 2
      printf("%-36s %8d %10.3f %10.1f %8s %10.1f %10.1f\n", a.name, t, sec * 1e3,
             flops / sec * 1e-9, "", flops / g_best * 1e-9, flops / (g_cpu / t) * 1e-9);
      fflush(stdout);
    }
  }
  // The backward (dQ, dK, dV) on the same shapes: "attn_grad ..." rows.
  for (const AT& a : ats) {
    const std::string name = std::string("attn_grad") + (a.name + 4);
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    size_t n = (size_t)(a.b * a.h * a.t * a.d);
    auto q = rnd(n, 3), k = rnd(n, 4), v = rnd(n, 5), dout = rnd(n, 6);
    std::vector<float> o(n), dq(n), dk(n), dv(n);
    const float scale = 1.f / sqrtf((float)a.d);
    tfc_k_attention_f32(q.data(), k.data(), v.data(), o.data(), a.b, a.h, a.h, a.t, a.t, a.d,
                        a.d, a.causal, 0, scale);
    for (int t : threads) {
      Pool pool(t);
      tfc_kernels_set_host(t > 1 ? pool.api() : nullptr);
      double sec = median_seconds([&] {
        tfc_k_attention_grad_f32(q.data(), k.data(), v.data(), o.data(), dout.data(), dq.data(),
                                 dk.data(), dv.data(), a.b, a.h, a.h, a.t, a.t, a.d, a.d,
                                 a.causal, 0, scale);
      });
      tfc_kernels_set_host(nullptr);
      double pairs = a.causal ? a.t * (a.t + 1) / 2.0 : (double)a.t * a.t;
      double flops = 8.0 * a.b * a.h * pairs * a.d;  // QK^T, dO V^T, dS K, dS^T Q (dV: +2)
      printf("%-36s %8d %10.3f %10.1f %8s %10.1f %10.1f\n", name.c_str(), t, sec * 1e3,
             flops / sec * 1e-9, "", flops / g_best * 1e-9, flops / (g_cpu / t) * 1e-9);
      fflush(stdout);
    }
  }
  decode_pass(threads, filter);
  return 0;
}
