// Per-thread context of the current entry call: host API, pending error, scratch memory.
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "internal.h"
#include "tfc_kernels.h"

namespace tfc_kern {
namespace {

struct Ctx {
  const tfc_host_api_t* host = nullptr;
  bool in_parallel = false;
  std::atomic<int> error_state{0};  // 0: none, 1: being written, 2: set
  char message[1024] = {0};
};

thread_local Ctx tls_own;
// Non-null while this thread runs part of a kernel's parallel region on behalf of
// another thread: errors and "no nesting" then refer to the caller's context.
thread_local Ctx* tls_borrowed = nullptr;

Ctx& current() { return tls_borrowed ? *tls_borrowed : tls_own; }

struct Trampoline {
  void (*fn)(void*, int64_t, int64_t);
  void* ctx;
  Ctx* owner;
};

void run_part(void* t, int64_t begin, int64_t end) {
  const Trampoline* tr = static_cast<const Trampoline*>(t);
  Ctx* saved = tls_borrowed;
  tls_borrowed = tr->owner;
  tr->fn(tr->ctx, begin, end);
  tls_borrowed = saved;
}

struct Scratch {
  float* ptr[kScratchSlots] = {};
  size_t cap[kScratchSlots] = {};
  ~Scratch() {
    for (int i = 0; i < kScratchSlots; ++i) free(ptr[i]);
  }
};
thread_local Scratch tls_scratch;

}  // namespace

void parallel_for(int64_t n, int64_t grain, void (*fn)(void*, int64_t, int64_t), void* ctx) {
  if (n <= 0) return;
  Ctx& c = current();
  const tfc_host_api_t* h = c.host;
  if (grain < 1) grain = 1;
  if (!h || !h->parallel_for || c.in_parallel || n <= grain) {
    fn(ctx, 0, n);
    return;
  }
  Trampoline tr{fn, ctx, &c};
  c.in_parallel = true;
  h->parallel_for(h->user, n, grain, run_part, &tr);
  c.in_parallel = false;
}

float* scratch(int slot, size_t count) {
  Scratch& s = tls_scratch;
  if (count == 0) count = 1;
  if (s.cap[slot] < count) {
    free(s.ptr[slot]);
    size_t cap = count + count / 4 + 64;
    size_t bytes = (cap * sizeof(float) + 63) & ~size_t(63);
    s.ptr[slot] = static_cast<float*>(aligned_alloc(64, bytes));
    s.cap[slot] = s.ptr[slot] ? cap : 0;
    if (!s.ptr[slot]) tfc_kernels_error("tfc kernels: out of memory for scratch buffers");
  }
  return s.ptr[slot];
}

}  // namespace tfc_kern

extern "C" {

void tfc_kernels_set_host(const tfc_host_api_t* host) {
  tfc_kern::Ctx& c = tfc_kern::tls_own;
  // A host whose struct predates the kernel timers is treated as absent.
  if (host && host->struct_size < sizeof(tfc_host_api_t)) host = nullptr;
  c.host = host;
  c.in_parallel = false;
  c.error_state.store(0, std::memory_order_relaxed);
}

void tfc_kernels_kernel_begin(int32_t kernel) {
  const tfc_host_api_t* h = tfc_kern::tls_own.host;
  if (h && h->kernel_begin && h->kernel_end) h->kernel_begin(h->user, kernel);
}

void tfc_kernels_kernel_end(int32_t kernel) {
  const tfc_host_api_t* h = tfc_kern::tls_own.host;
  if (h && h->kernel_begin && h->kernel_end) h->kernel_end(h->user, kernel);
}

void tfc_kernels_device_launch(int32_t kernel, const tfc_device_launch_t* launch,
                               void* const* args, int32_t num_args) {
  const tfc_host_api_t* h = tfc_kern::tls_own.host;
  if (!h || !h->device_launch) {
    tfc_kernels_error("a device artifact's entry ran without a device runtime (no device_launch)");
    return;
  }
  h->device_launch(h->user, kernel, launch, args, num_args);
}

void tfc_kernels_device_copy(void* dst, const void* src, uint64_t bytes) {
  const tfc_host_api_t* h = tfc_kern::tls_own.host;
  if (!h || !h->device_copy) {
    tfc_kernels_error("a device artifact's entry ran without a device runtime (no device_copy)");
    return;
  }
  h->device_copy(h->user, dst, src, bytes);
}

void* tfc_kernels_device_constant(const void* data, uint64_t bytes) {
  const tfc_host_api_t* h = tfc_kern::tls_own.host;
  if (!h || !h->device_constant) {
    tfc_kernels_error(
        "a device artifact's entry ran without a device runtime (no device_constant)");
    return nullptr;
  }
  return h->device_constant(h->user, data, bytes);
}

int32_t tfc_kernels_device_matmul(const tfc_device_matmul_t* product, const void* a,
                                  const void* b, void* c, const void* bias) {
  const tfc_host_api_t* h = tfc_kern::tls_own.host;
  if (!h || !h->device_matmul) return 1;  // the artifact's own kernel runs it
  return h->device_matmul(h->user, product, a, b, c, bias);
}

void tfc_kernels_collective_f32(int32_t kind, int32_t reduce, const char* group, const float* send,
                                float* recv, int64_t count) {
  const tfc_host_api_t* h = tfc_kern::tls_own.host;
  if (!h || !h->collective) {
    tfc_kernels_error(
        "a collective (tfc.all_reduce) ran in a host without a communicator; run the artifact "
        "with a tfc runtime that has one (tfc-run, under mpirun for --dp)");
    return;
  }
  // The host reports its own error (naming the collective and the ranks).
  (void)h->collective(h->user, kind, reduce, group, send, recv, static_cast<uint64_t>(count));
}

void tfc_kernels_collective_start_f32(int32_t kind, int32_t reduce, const char* group,
                                      int64_t tag, int32_t num_buffers,
                                      const float* const* send, const int64_t* counts) {
  const tfc_host_api_t* h = tfc_kern::tls_own.host;
  if (!h || !h->collective_start || !h->collective_wait) {
    tfc_kernels_error(
        "a gradient bucket (tfc.all_reduce_start) ran in a host without a communicator; run "
        "the artifact with a tfc runtime that has one (tfc-run, under mpirun for --dp)");
    return;
  }
  // The host reports its own error, here or at the wait.
  (void)h->collective_start(h->user, kind, reduce, group, tag, num_buffers,
                            reinterpret_cast<const void* const*>(send), counts);
}

void tfc_kernels_collective_wait_f32(int64_t tag, int32_t num_buffers, float* const* recv,
                                     const int64_t* counts) {
  const tfc_host_api_t* h = tfc_kern::tls_own.host;
  if (!h || !h->collective_start || !h->collective_wait) return;  // reported at the start
  (void)h->collective_wait(h->user, tag, num_buffers, reinterpret_cast<void* const*>(recv),
                           counts);
}

void tfc_kernels_p2p(int32_t kind, const char* group, int32_t peer, int64_t tag, void* data,
                     int64_t bytes) {
  const tfc_host_api_t* h = tfc_kern::tls_own.host;
  if (!h || !h->p2p) {
    tfc_kernels_error(
        "a point-to-point message (tfc.send / tfc.recv of pipeline stages) ran in a host "
        "without a communicator; run the artifact with tfc-run under mpirun (tfc --pp)");
    return;
  }
  // The host reports its own error (naming the message, the peer and the ranks).
  (void)h->p2p(h->user, kind, group, peer, tag, data, static_cast<uint64_t>(bytes));
}

void tfc_kernels_parallel_for(int64_t n, int64_t grain,
                              void (*fn)(void* ctx, int64_t begin, int64_t end), void* ctx) {
  tfc_kern::parallel_for(n, grain, fn, ctx);
}

void tfc_kernels_error(const char* message) {
  tfc_kern::Ctx& c = tfc_kern::current();
  int expected = 0;
  if (!c.error_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
  if (!message) message = "tfc kernels: unknown error";
  size_t n = strlen(message);
  if (n >= sizeof(c.message)) n = sizeof(c.message) - 1;
  memcpy(c.message, message, n);
  c.message[n] = '\0';
  c.error_state.store(2, std::memory_order_release);
}

const char* tfc_kernels_take_error(void) {
  tfc_kern::Ctx& c = tfc_kern::tls_own;
  if (c.error_state.load(std::memory_order_acquire) != 2) return nullptr;
  c.error_state.store(0, std::memory_order_relaxed);
  return c.message;
}

}  // extern "C"
