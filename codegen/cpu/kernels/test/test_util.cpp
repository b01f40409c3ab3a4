#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <chrono>
#include <thread>

#include "internal.h"
// The seed comes from the one place every C++ test takes it from (TFC_TEST_SEED), and
// its listener prints it after any failing kernel test.
#include "../../../../runtime/test/test_seed.hpp"

namespace tfc_kern_test {

uint64_t run_seed() { return tfc::testing::testSeed(); }

std::vector<float> random_vec(std::mt19937_64& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    do {
      x = d(rng);
    } while (fabsf(x) < 1e-3f);
  }
  return v;
}

std::vector<uint16_t> round_to_16bit(std::vector<float>& x, int b_type) {
  std::vector<uint16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t u;
    memcpy(&u, &x[i], 4);
    uint16_t h;
    if (b_type == TFC_K_BF16) {
      h = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
      x[i] = tfc_kern::bf16_to_f32(h);
    } else {
      const int e = (int)((u >> 23) & 0xffu) - 127 + 15;
      if (e < 1 || e > 30) abort();  // outside half's normal range: not for these tests
      uint32_t man = (u & 0x7fffffu) >> 13, rest = u & 0x1fffu;
      uint32_t bits = ((uint32_t)e << 10) | man;
      if (rest > 0x1000u || (rest == 0x1000u && (man & 1u))) ++bits;  // carries into e
      h = (uint16_t)(((u >> 16) & 0x8000u) | bits);
      x[i] = tfc_kern::f16_to_f32(h);
    }
    out[i] = h;
  }
  return out;
}

std::vector<std::string> available_isas() {
  std::vector<std::string> out;
  for (const char* n : {"avx512", "avx2", "scalar"}) {
    if (tfc_kernels_internal_set_isa(n)) out.push_back(n);
  }
  tfc_kernels_internal_set_isa(nullptr);
  return out;
}

ThreadHost::ThreadHost(int threads) : threads_(threads) {
  api_.struct_size = sizeof(tfc_host_api_t);
  api_.user = this;
  api_.parallel_for = &ThreadHost::parallel_for;
  api_.report_error = &ThreadHost::report_error;
}

void ThreadHost::parallel_for(void* user, int64_t n, int64_t grain,
                              void (*fn)(void*, int64_t, int64_t), void* ctx) {
  ThreadHost* self = static_cast<ThreadHost*>(user);
  ++self->calls_;
  if (grain < 1) grain = 1;
  int64_t parts = std::min<int64_t>(self->threads_, std::max<int64_t>(1, n / grain));
  std::vector<std::thread> workers;
  int64_t per = n / parts, extra = n % parts, begin = 0;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t p = 0; p < parts; ++p) {
    int64_t len = per + (p < extra ? 1 : 0);
    ranges.push_back({begin, begin + len});
    begin += len;
  }
  for (int64_t p = 1; p < parts; ++p) {
    workers.emplace_back([=] { fn(ctx, ranges[p].first, ranges[p].second); });
  }
  fn(ctx, ranges[0].first, ranges[0].second);
  for (auto& w : workers) w.join();
}

void ThreadHost::report_error(void*, const char*) {}

double rel_max_err(const float* a, const double* b, size_t n) {
  double mx = 0, err = 0;
  for (size_t i = 0; i < n; ++i) {
    // A NaN or an infinity in either array where the other is finite (or a NaN on both
    // sides) is a mismatch that no later element may hide: return at once.
    double got = (double)a[i], want = b[i];
    if (std::isnan(got) || std::isnan(want) || std::isinf(got) != std::isinf(want) ||
        (std::isinf(got) && (got > 0) != (want > 0))) {
      return std::numeric_limits<double>::infinity();
    }
    if (std::isinf(got)) continue;  // the same infinity on both sides
    mx = std::max(mx, fabs(want));
    err = std::max(err, fabs(got - want));
  }
  return err / std::max(mx, 1e-30);
}

}  // namespace tfc_kern_test
