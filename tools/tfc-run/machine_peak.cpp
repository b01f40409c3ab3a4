// Peak FMA rate, STREAM-triad and read bandwidth, measured on this machine (machine_peak.hpp).
#include "machine_peak.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "tfc/runtime/runtime.h"

namespace tfc::run {
namespace {

using Clock = std::chrono::steady_clock;

// Independent FMA chains: enough of them (12) to cover the FMA latency times the number of
// FMA pipes of current x86 cores, so the loop runs at the issue rate, not the latency.
constexpr int kChains = 12;

__attribute__((target("avx512f"))) float fmaChainsAvx512(int64_t iterations) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(0.001f * static_cast<float>(j));
  const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16  // the chains must stay in registers
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, c);
  }
  __m512 sum = acc[0];
  for (int j = 1; j < kChains; ++j) sum = _mm512_add_ps(sum, acc[j]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx2,fma"))) float fmaChainsAvx2(int64_t iterations) {
  __m256 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_ps(0.001f * static_cast<float>(j));
  const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16  // the chains must stay in registers
    for (int j = 0; j < kChains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], m, c);
  }
  __m256 sum = acc[0];
  for (int j = 1; j < kChains; ++j) sum = _mm256_add_ps(sum, acc[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}

// SSE2 (every x86-64): multiply and add, 4 lanes, counted as 2 FLOPs per lane.
float fmaChainsSse(int64_t iterations) {
  __m128 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm_set1_ps(0.001f * static_cast<float>(j));
  const __m128 m = _mm_set1_ps(0.9999999f), c = _mm_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16  // the chains must stay in registers
    for (int j = 0; j < kChains; ++j) acc[j] = _mm_add_ps(_mm_mul_ps(acc[j], m), c);
  }
  __m128 sum = acc[0];
  for (int j = 1; j < kChains; ++j) sum = _mm_add_ps(sum, acc[j]);
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, sum);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

// Sums of n floats (n a multiple of 64), four independent chains of 16-float vectors: a read
// stream, compiled for each vector width and picked by the CPU at run time.
typedef float Float16 __attribute__((vector_size(64)));

__attribute__((target_clones("avx512f", "avx2", "default"))) float readSum(const float* p,
                                                                           size_t n) {
  Float16 s[4] = {};
  for (size_t i = 0; i < n; i += 64) {
    for (int c = 0; c < 4; ++c) {
      Float16 x;
      __builtin_memcpy(&x, p + i + 16 * c, sizeof x);
      s[c] += x;
    }
  }
  Float16 total = (s[0] + s[1]) + (s[2] + s[3]);
  float sum = 0;
  for (int l = 0; l < 16; ++l) sum += total[l];
  return sum;
}

// Runs body(t) on |threads| threads at once (t = 0 on the calling thread) and returns the
// wall-clock seconds from the common start to the last one's end.
double timeOnThreads(int threads, const std::function<void(int)>& body) {
  std::vector<std::thread> workers;
  auto start = Clock::now();
  for (int t = 1; t < threads; ++t) workers.emplace_back(body, t);
  body(0);
  for (std::thread& w : workers) w.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

volatile float g_sink;  // keeps the FMA results alive

}  // namespace

MachinePeak measureMachinePeak(int threads, size_t arrayBytes) {
  threads = std::max(threads, 1);
  MachinePeak peak;

  float (*chains)(int64_t) = fmaChainsSse;
  int lanes = 4;
  peak.isa = "sse2";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    chains = fmaChainsAvx512;
    lanes = 16;
    peak.isa = "avx512f";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    chains = fmaChainsAvx2;
    lanes = 8;
    peak.isa = "avx2+fma";
  }
  const int64_t iterations = 4'000'000;  // ~0.05 s per thread at a few GHz
  for (int rep = 0; rep < 3; ++rep) {
    double seconds = timeOnThreads(threads, [&](int) { g_sink = chains(iterations); });
    double flops = 2.0 * kChains * lanes * static_cast<double>(iterations) * threads;
    peak.flopsPerSecond = std::max(peak.flopsPerSecond, flops / seconds);
  }

  // STREAM triad, each thread on its own contiguous part (first touched by that thread).
  // The arrays come from the runtime's allocator, on the pages its weights, arenas and
  // caches get (huge pages where the system gives them): the floor it sets is for the
  // memory as the runtime uses it.
  const size_t n = std::max<size_t>(arrayBytes / sizeof(float), 1024);
  const tfc_allocator_t allocator = tfc_allocator_system();
  auto allocate = [&] {
    void* p = allocator.allocate(allocator.self, n * sizeof(float), 64);
    if (p == nullptr) throw std::bad_alloc();
    return std::unique_ptr<float[], std::function<void(float*)>>(
        static_cast<float*>(p), [allocator](float* q) { allocator.deallocate(allocator.self, q); });
  };
  auto a = allocate(), b = allocate(), c = allocate();
  auto part = [&](int t, size_t* begin, size_t* end) {
    *begin = n * static_cast<size_t>(t) / static_cast<size_t>(threads);
    *end = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
  };
  timeOnThreads(threads, [&](int t) {
    size_t begin, end;
    part(t, &begin, &end);
    for (size_t i = begin; i < end; ++i) {
      a[i] = 0.0f;
      b[i] = 1.0f;
      c[i] = 2.0f;
    }
  });
  const float s = 3.0f;
  for (int rep = 0; rep < 4; ++rep) {
    double seconds = timeOnThreads(threads, [&](int t) {
      size_t begin, end;
      part(t, &begin, &end);
      float* __restrict pa = a.get();
      const float* __restrict pb = b.get();
      const float* __restrict pc = c.get();
      for (size_t i = begin; i < end; ++i) pa[i] = pb[i] + s * pc[i];
    });
    if (rep == 0) continue;  // the first pass warms the TLB and the pages
    peak.bytesPerSecond =
        std::max(peak.bytesPerSecond, 3.0 * sizeof(float) * static_cast<double>(n) / seconds);
  }
  // Reads alone: each thread sums its parts of the three arrays (whole 64-float blocks).
  for (int rep = 0; rep < 4; ++rep) {
    double seconds = timeOnThreads(threads, [&](int t) {
      size_t begin, end;
      part(t, &begin, &end);
      begin = (begin + 63) / 64 * 64;
      end = std::max(begin, end / 64 * 64);
      float sum = 0;
      for (const float* array : {a.get(), b.get(), c.get()}) {
        sum += readSum(array + begin, end - begin);
      }
      g_sink = sum;
    });
    if (rep == 0) continue;
    peak.readBytesPerSecond =
        std::max(peak.readBytesPerSecond, 3.0 * sizeof(float) * static_cast<double>(n) / seconds);
  }
  g_sink = a[n / 2];
  return peak;
}

}  // namespace tfc::run
