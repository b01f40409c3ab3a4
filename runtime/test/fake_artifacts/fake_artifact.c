/* A hand-written stand-in for a compiled model: fills a tfc_artifact_t by hand with
 * trivial entry points, so that the runtime can be tested without the compiler.
 * Built several times (see runtime/CMakeLists.txt): plain as fake_model, and with
 * FAKE_BREAK=<n> or FAKE_SYMBOL_V1 as deliberately broken artifacts.
 *
 * Parameters: scale f32[4] = ones, bias f32[4] = zeros, proj.weight f32[4,4] =
 *             orthogonal(1.0), embed f32[8,4] = normal(0.0, 0.02)
 * State:      acc f32[4] = zeros, steps i64[] = zeros
 * Entries:
 *   forward(x f32[2,4]) -> y f32[2,4]    y = x * scale + bias + acc (rows in parallel)
 *   decode(pos i32[], x f32[4]) -> y f32[4]
 *                                        pos must be in [0, 16); acc += x; steps += 1; y = acc
 *   update(delta f32[4]) -> sum f32[]    scale += delta (in place); sum = sum(scale)
 *   double(x f32[1000]) -> y f32[1000]   y = 2 x through parallel_for(1000, grain 7)
 *   fail() -> ()                         reports "token id 99 is out of range [0, 50)"
 *   fail_silent() -> ()                  returns 3 without reporting
 *   big_arena(x f32[1]) -> y f32[1]      y = x + 1 with a 64 MiB arena it touches
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c99 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tfc/artifact_abi.h"

#ifndef FAKE_BREAK
#define FAKE_BREAK 0
#endif

#define EXPORT __attribute__((visibility("default")))

static const int64_t kShape4[] = {4};
static const int64_t kShape44[] = {4, 4};
static const int64_t kShape84[] = {8, 4};
static const int64_t kShape24[] = {2, 4};
static const int64_t kShape1000[] = {1000};
static const int64_t kShape1[] = {1};
#if FAKE_BREAK == 6
static const int64_t kShapeBad[] = {4, 0};
#endif

static const tfc_tensor_desc_t kParams[] = {
#if FAKE_BREAK == 4
    {NULL, TFC_ABI_F32, 1, kShape4, "ones", 0, 0},
#else
    {"scale", TFC_ABI_F32, 1, kShape4, "ones", 0, 0},
#endif
#if FAKE_BREAK == 5
    {"bias", TFC_ABI_F32, 9, kShape4, "zeros", 0, 0},
#elif FAKE_BREAK == 7
    {"bias", 99, 1, kShape4, "zeros", 0, 0},
#elif FAKE_BREAK == 9
    {"scale", TFC_ABI_F32, 1, kShape4, "zeros", 0, 0},
#elif FAKE_BREAK == 11
    {"bias", TFC_ABI_F32, 1, kShape4, "xavier(1.0)", 0, 0},
#elif FAKE_BREAK == 13
    {"bias", TFC_ABI_F32, 1, kShape4, "orthogonal(1.0)", 0, 0},
#else
    {"bias", TFC_ABI_F32, 1, kShape4, "zeros", 0, 0},
#endif
#if FAKE_BREAK == 6
    {"proj.weight", TFC_ABI_F32, 2, kShapeBad, "orthogonal(1.0)", 0, 0},
#else
    {"proj.weight", TFC_ABI_F32, 2, kShape44, "orthogonal(1.0)", TFC_TENSOR_FROZEN, 0},
#endif
    {"embed", TFC_ABI_F32, 2, kShape84, "normal(0.0, 0.02)", 0, 0},
};

static const tfc_tensor_desc_t kState[] = {
    {"acc", TFC_ABI_F32, 1, kShape4, "zeros", 0, 0},
    {"steps", TFC_ABI_I64, 0, NULL, "zeros", 0, 0},
};

/* forward */
static const tfc_tensor_desc_t kForwardIn[] = {{"x", TFC_ABI_F32, 2, kShape24, "", 0, 0}};
static const tfc_tensor_desc_t kForwardOut[] = {{"y", TFC_ABI_F32, 2, kShape24, "", 0, 0}};

struct ForwardArgs {
  const float* x;
  const float* scale;
  const float* bias;
  const float* acc;
  float* y;
};

static void forwardRows(void* ctx, int64_t begin, int64_t end) {
  const struct ForwardArgs* a = (const struct ForwardArgs*)ctx;
  for (int64_t r = begin; r < end; ++r) {
    for (int c = 0; c < 4; ++c) a->y[r * 4 + c] = a->x[r * 4 + c] * a->scale[c] + a->bias[c] + a->acc[c];
  }
}

static int32_t forward(const tfc_host_api_t* host, void* const* params, void* const* state,
                       void* const* inputs, void* const* outputs, void* arena) {
  if (((uintptr_t)arena % TFC_ARENA_ALIGNMENT) != 0 || arena == NULL) {
    host->report_error(host->user, "arena is not aligned");
    return 1;
  }
  /* Two "kernel launches", bracketed as compiled code brackets them (kForwardKernels); the
   * second takes at least 1 ms, so profiles have a time to find. */
  int timed = host->kernel_begin != NULL && host->kernel_end != NULL;
  if (timed) host->kernel_begin(host->user, 0);
  memset(arena, 0xAB, 256); /* scratch use, all of it */
  if (timed) host->kernel_end(host->user, 0);
  if (timed) host->kernel_begin(host->user, 1);
  struct ForwardArgs args = {(const float*)inputs[0], (const float*)params[0],
                             (const float*)params[1], (const float*)state[0],
                             (float*)outputs[0]};
  host->parallel_for(host->user, 2, 1, forwardRows, &args);
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 1000000L);
  if (timed) host->kernel_end(host->user, 1);
  return 0;
}

static const tfc_kernel_desc_t kForwardKernels[] = {
    {"k0_fill", "fill", 0, 0, 256},
    {"k1_rows", "fused.pointwise: mul, add, add", 24, 128, 32},
};

/* decode */
static const tfc_tensor_desc_t kDecodeIn[] = {{"pos", TFC_ABI_I32, 0, NULL, "", 0, 0},
                                              {"x", TFC_ABI_F32, 1, kShape4, "", 0, 0}};
static const tfc_tensor_desc_t kDecodeOut[] = {{"y", TFC_ABI_F32, 1, kShape4, "", 0, 0}};

static int32_t decode(const tfc_host_api_t* host, void* const* params, void* const* state,
                      void* const* inputs, void* const* outputs, void* arena) {
  (void)params;
  (void)arena;
  int32_t pos = *(const int32_t*)inputs[0];
  if (pos < 0 || pos >= 16) {
    char message[96];
    snprintf(message, sizeof(message), "position %d is out of range [0, 16)", (int)pos);
    host->report_error(host->user, message);
    return 1;
  }
  float* acc = (float*)state[0];
  const float* x = (const float*)inputs[1];
  float* y = (float*)outputs[0];
  for (int i = 0; i < 4; ++i) {
    acc[i] += x[i];
    y[i] = acc[i];
  }
  *(int64_t*)state[1] += 1;
  return 0;
}

/* update */
static const tfc_tensor_desc_t kUpdateIn[] = {{"delta", TFC_ABI_F32, 1, kShape4, "", 0, 0}};
static const tfc_tensor_desc_t kUpdateOut[] = {{"sum", TFC_ABI_F32, 0, NULL, "", 0, 0}};

static int32_t update(const tfc_host_api_t* host, void* const* params, void* const* state,
                      void* const* inputs, void* const* outputs, void* arena) {
  (void)host;
  (void)state;
  (void)arena;
  float* scale = (float*)params[0];
  const float* delta = (const float*)inputs[0];
  float sum = 0.0f;
  for (int i = 0; i < 4; ++i) {
    scale[i] += delta[i];
    sum += scale[i];
  }
  *(float*)outputs[0] = sum;
  return 0;
}

/* double */
static const tfc_tensor_desc_t kDoubleIn[] = {{"x", TFC_ABI_F32, 1, kShape1000, "", 0, 0}};
static const tfc_tensor_desc_t kDoubleOut[] = {{"y", TFC_ABI_F32, 1, kShape1000, "", 0, 0}};

struct DoubleArgs {
  const float* x;
  float* y;
};

static void doubleChunk(void* ctx, int64_t begin, int64_t end) {
  const struct DoubleArgs* a = (const struct DoubleArgs*)ctx;
  for (int64_t i = begin; i < end; ++i) a->y[i] = 2.0f * a->x[i];
}

static int32_t doubleEntry(const tfc_host_api_t* host, void* const* params, void* const* state,
                           void* const* inputs, void* const* outputs, void* arena) {
  (void)params;
  (void)state;
  (void)arena;
  struct DoubleArgs args = {(const float*)inputs[0], (float*)outputs[0]};
  host->parallel_for(host->user, 1000, 7, doubleChunk, &args);
  return 0;
}

/* fail, fail_silent */
static int32_t fail(const tfc_host_api_t* host, void* const* params, void* const* state,
                    void* const* inputs, void* const* outputs, void* arena) {
  (void)params;
  (void)state;
  (void)inputs;
  (void)outputs;
  (void)arena;
  host->report_error(host->user, "token id 99 is out of range [0, 50)");
  return 1;
}

static int32_t failSilent(const tfc_host_api_t* host, void* const* params, void* const* state,
                          void* const* inputs, void* const* outputs, void* arena) {
  (void)host;
  (void)params;
  (void)state;
  (void)inputs;
  (void)outputs;
  (void)arena;
  return 3;
}

/* big_arena */
#define BIG_ARENA_BYTES (64ull << 20)
static const tfc_tensor_desc_t kBigIn[] = {{"x", TFC_ABI_F32, 1, kShape1, "", 0, 0}};
static const tfc_tensor_desc_t kBigOut[] = {{"y", TFC_ABI_F32, 1, kShape1, "", 0, 0}};

static int32_t bigArena(const tfc_host_api_t* host, void* const* params, void* const* state,
                        void* const* inputs, void* const* outputs, void* arena) {
  (void)host;
  (void)params;
  (void)state;
  unsigned char* bytes = (unsigned char*)arena;
  bytes[0] = 1;
  bytes[BIG_ARENA_BYTES - 1] = 2;
  *(float*)outputs[0] = *(const float*)inputs[0] + (float)(bytes[0] + bytes[BIG_ARENA_BYTES - 1]) - 2.0f;
  return 0;
}

static const tfc_entry_t kEntries[] = {
    {"forward", 1, 1, kForwardIn, kForwardOut, 256, 2, forward, kForwardKernels},
    {"decode", 2, 1, kDecodeIn, kDecodeOut, 0, 1,
#if FAKE_BREAK == 8
     NULL, NULL},
#else
     decode, NULL},
#endif
    {"update", 1, 1, kUpdateIn, kUpdateOut, 0, 1, update, NULL},
    {"double", 1, 1, kDoubleIn, kDoubleOut, 0, 1, doubleEntry, NULL},
    {"fail", 0, 0, NULL, NULL, 0, 1, fail, NULL},
#if FAKE_BREAK == 10
    {"fail", 0, 0, NULL, NULL, 0, 1, failSilent, NULL},
#else
    {"fail_silent", 0, 0, NULL, NULL, 0, 1, failSilent, NULL},
#endif
    {"big_arena", 1, 1, kBigIn, kBigOut, BIG_ARENA_BYTES, 1, bigArena, NULL},
};

static const tfc_artifact_t kArtifact = {
#if FAKE_BREAK == 1
    0xDEADBEEFu,
#else
    TFC_ARTIFACT_MAGIC,
#endif
#if FAKE_BREAK == 2
    TFC_ARTIFACT_ABI_VERSION + 1,
#else
    TFC_ARTIFACT_ABI_VERSION,
#endif
#if FAKE_BREAK == 3
    16,
#else
    sizeof(tfc_artifact_t),
#endif
    0,
    "x86_64-unknown-linux-gnu:fake",
    "tfc 0.1.0 (fake artifact)",
    "0123456789abcdef",
    "{\"model\": \"fake\", \"d_model\": 4}",
    (int32_t)(sizeof(kParams) / sizeof(kParams[0])),
    (int32_t)(sizeof(kState) / sizeof(kState[0])),
    (int32_t)(sizeof(kEntries) / sizeof(kEntries[0])),
    0,
    kParams,
    kState,
    kEntries,
};

/* The exported name carries the ABI version (artifact_abi.h). */
_Static_assert(TFC_ARTIFACT_ABI_VERSION == 6, "rename tfc_artifact_v6 below to the new version");
#if defined(FAKE_SYMBOL_V1)
/* An artifact of the previous ABI. */
EXPORT const tfc_artifact_t* tfc_artifact_v1(void) { return &kArtifact; }
#else
EXPORT const tfc_artifact_t* tfc_artifact_v6(void) {
#if FAKE_BREAK == 12
  return NULL;
#else
  return &kArtifact;
#endif
}
#endif
