/* A hand-written stand-in for a model compiled with `tfc --optimizer=adamw`, so that
 * `tfc-run train`, tfc::Trainer and tfc::Generator can be tested without the compiler: a bigram language model
 * (logits[b,t,:] = wte[tokens[b,t], :] + bias) with the entries and state that
 * tfc-train-step builds.
 *
 * Parameters: wte f32[16,16] = normal(0.0, 0.02), bias f32[16] = zeros
 * State:      opt.m.wte, opt.v.wte f32[16,16], opt.m.bias, opt.v.bias f32[16] = zeros,
 *             train.step i64[] = zeros
 * Entries:    forward(tokens i32[2,8]) -> logits f32[2,8,16]
 *             loss(tokens, targets i32[2,8]) -> loss f32[]   (mean cross-entropy, -100 ignored)
 *             train_step(tokens, targets, lr, min_lr, warmup, total_steps, schedule,
 *                        weight_decay, grad_clip, beta1, beta2, eps) -> (loss, lr, grad_norm)
 *             AdamW as PyTorch's, weight decay on rank >= 2, schedules 0/1/2, global-norm
 *             clipping, as passes/Passes.td describes tfc-train-step.
 *             prefill(tokens i32[2,4], pos i32[], n i32[]) -> logits f32[2,16]
 *             decode(token i32[2,1], pos i32[]) -> logits f32[2,16]
 *             As a compiled gpt2 (metadata n_ctx 8, chunk P 4) does: a position past the
 *             context fails as the position embedding's lookup ("embedding: id out of
 *             range"), and prefill's n is clamped to [1, P] after an int32 n - 1, so that
 *             tfc-run's own checks of these inputs can be tested.
 *             decode_rows(token i32[2,1], pos i32[2]) -> logits f32[2,16]
 *             prefill_row(tokens i32[1,4], row i32[], pos i32[], n i32[]) -> logits f32[1,16]
 *             The serving entries of a model traced with gen_batch 2 (a bigram has no KV
 *             cache: they check their positions and row as a compiled model would).
 *             sample(logits f32[2,16], temperature f32[], top_k i32[], top_p f32[],
 *                    seed i64[]) -> ids i32[2]
 *             temperature 0: the argmax of each row; else the argmax of logits / T plus a
 *             noise that is a function of (seed, row, id) only (top-k, top-p ignored), so
 *             that the seed a caller passes shows in the ids.
 * Built twice: plain (fake_train.so) and with FAKE_OTHER_HASH (fake_train_other.so, the
 * same tensors under another module hash).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tfc/artifact_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define V 16
#define B 2
#define T 8
#define NCTX 8
#define P 4

static const int64_t kShapeVV[] = {V, V};
static const int64_t kShapeV[] = {V};
static const int64_t kShapeBT[] = {B, T};
static const int64_t kShapeBTV[] = {B, T, V};
static const int64_t kShapeBP[] = {B, P};
static const int64_t kShapeB1[] = {B, 1};
static const int64_t kShapeBV[] = {B, V};
static const int64_t kShape1P[] = {1, P};
static const int64_t kShape1V[] = {1, V};

static const tfc_tensor_desc_t kParams[] = {
    {"wte", TFC_ABI_F32, 2, kShapeVV, "normal(0.0, 0.02)", 0, 0},
    {"bias", TFC_ABI_F32, 1, kShapeV, "zeros", 0, 0},
};
static const tfc_tensor_desc_t kState[] = {
    {"opt.m.wte", TFC_ABI_F32, 2, kShapeVV, "zeros", 0, 0},
    {"opt.v.wte", TFC_ABI_F32, 2, kShapeVV, "zeros", 0, 0},
    {"opt.m.bias", TFC_ABI_F32, 1, kShapeV, "zeros", 0, 0},
    {"opt.v.bias", TFC_ABI_F32, 1, kShapeV, "zeros", 0, 0},
    {"train.step", TFC_ABI_I64, 0, NULL, "zeros", 0, 0},
};

static const tfc_tensor_desc_t kForwardIn[] = {{"tokens", TFC_ABI_I32, 2, kShapeBT, "", 0, 0}};
static const tfc_tensor_desc_t kForwardOut[] = {{"logits", TFC_ABI_F32, 3, kShapeBTV, "", 0, 0}};
static const tfc_tensor_desc_t kLossIn[] = {{"tokens", TFC_ABI_I32, 2, kShapeBT, "", 0, 0},
                                            {"targets", TFC_ABI_I32, 2, kShapeBT, "", 0, 0}};
static const tfc_tensor_desc_t kLossOut[] = {{"loss", TFC_ABI_F32, 0, NULL, "", 0, 0}};
static const tfc_tensor_desc_t kTrainIn[] = {
    {"tokens", TFC_ABI_I32, 2, kShapeBT, "", 0, 0},  {"targets", TFC_ABI_I32, 2, kShapeBT, "", 0, 0},
    {"lr", TFC_ABI_F32, 0, NULL, "", 0, 0},           {"min_lr", TFC_ABI_F32, 0, NULL, "", 0, 0},
    {"warmup", TFC_ABI_F32, 0, NULL, "", 0, 0},       {"total_steps", TFC_ABI_F32, 0, NULL, "", 0, 0},
    {"schedule", TFC_ABI_F32, 0, NULL, "", 0, 0},     {"weight_decay", TFC_ABI_F32, 0, NULL, "", 0, 0},
    {"grad_clip", TFC_ABI_F32, 0, NULL, "", 0, 0},    {"beta1", TFC_ABI_F32, 0, NULL, "", 0, 0},
    {"beta2", TFC_ABI_F32, 0, NULL, "", 0, 0},        {"eps", TFC_ABI_F32, 0, NULL, "", 0, 0},
};
static const tfc_tensor_desc_t kTrainOut[] = {{"loss", TFC_ABI_F32, 0, NULL, "", 0, 0},
                                              {"lr", TFC_ABI_F32, 0, NULL, "", 0, 0},
                                              {"grad_norm", TFC_ABI_F32, 0, NULL, "", 0, 0}};

static const tfc_tensor_desc_t kPrefillIn[] = {{"tokens", TFC_ABI_I32, 2, kShapeBP, "", 0, 0},
                                               {"pos", TFC_ABI_I32, 0, NULL, "", 0, 0},
                                               {"n", TFC_ABI_I32, 0, NULL, "", 0, 0}};
static const tfc_tensor_desc_t kDecodeIn[] = {{"token", TFC_ABI_I32, 2, kShapeB1, "", 0, 0},
                                              {"pos", TFC_ABI_I32, 0, NULL, "", 0, 0}};
static const tfc_tensor_desc_t kLastLogits[] = {{"logits", TFC_ABI_F32, 2, kShapeBV, "", 0, 0}};
static const int64_t kShapeB[] = {B};
static const tfc_tensor_desc_t kDecodeRowsIn[] = {{"token", TFC_ABI_I32, 2, kShapeB1, "", 0, 0},
                                                  {"pos", TFC_ABI_I32, 1, kShapeB, "", 0, 0}};
static const tfc_tensor_desc_t kPrefillRowIn[] = {{"tokens", TFC_ABI_I32, 2, kShape1P, "", 0, 0},
                                                  {"row", TFC_ABI_I32, 0, NULL, "", 0, 0},
                                                  {"pos", TFC_ABI_I32, 0, NULL, "", 0, 0},
                                                  {"n", TFC_ABI_I32, 0, NULL, "", 0, 0}};
static const tfc_tensor_desc_t kRowLogits[] = {{"logits", TFC_ABI_F32, 2, kShape1V, "", 0, 0}};
static const tfc_tensor_desc_t kSampleIn[] = {{"logits", TFC_ABI_F32, 2, kShapeBV, "", 0, 0},
                                              {"temperature", TFC_ABI_F32, 0, NULL, "", 0, 0},
                                              {"top_k", TFC_ABI_I32, 0, NULL, "", 0, 0},
                                              {"top_p", TFC_ABI_F32, 0, NULL, "", 0, 0},
                                              {"seed", TFC_ABI_I64, 0, NULL, "", 0, 0}};
static const tfc_tensor_desc_t kSampleOut[] = {{"ids", TFC_ABI_I32, 1, kShapeB, "", 0, 0}};

static int checkTokens(const tfc_host_api_t* host, const int32_t* tokens) {
  for (int i = 0; i < B * T; ++i) {
    if (tokens[i] < 0 || tokens[i] >= V) {
      char message[96];
      snprintf(message, sizeof(message), "token id %d is out of range [0, %d)", (int)tokens[i], V);
      host->report_error(host->user, message);
      return 1;
    }
  }
  return 0;
}

/* Mean cross-entropy; with dlogits != NULL also d(loss)/d(logits). */
static float crossEntropy(const float* wte, const float* bias, const int32_t* tokens,
                          const int32_t* targets, float* dlogits) {
  int count = 0;
  for (int i = 0; i < B * T; ++i) count += targets[i] != -100;
  float total = 0.0f;
  for (int i = 0; i < B * T; ++i) {
    float logits[V], maxLogit = -INFINITY, sum = 0.0f;
    for (int v = 0; v < V; ++v) {
      logits[v] = wte[tokens[i] * V + v] + bias[v];
      if (logits[v] > maxLogit) maxLogit = logits[v];
    }
    for (int v = 0; v < V; ++v) sum += expf(logits[v] - maxLogit);
    if (dlogits) memset(dlogits + i * V, 0, sizeof(float) * V);
    if (targets[i] == -100) continue;
    total += logf(sum) + maxLogit - logits[targets[i]];
    if (dlogits) {
      for (int v = 0; v < V; ++v) {
        dlogits[i * V + v] = (expf(logits[v] - maxLogit) / sum - (v == targets[i])) / (float)count;
      }
    }
  }
  return count ? total / (float)count : 0.0f;
}

static int32_t forward(const tfc_host_api_t* host, void* const* params, void* const* state,
                       void* const* inputs, void* const* outputs, void* arena) {
  (void)state, (void)arena;
  const int32_t* tokens = (const int32_t*)inputs[0];
  if (checkTokens(host, tokens)) return 1;
  const float* wte = (const float*)params[0];
  const float* bias = (const float*)params[1];
  float* logits = (float*)outputs[0];
  for (int i = 0; i < B * T; ++i) {
    for (int v = 0; v < V; ++v) logits[i * V + v] = wte[tokens[i] * V + v] + bias[v];
  }
  return 0;
}

static int32_t loss(const tfc_host_api_t* host, void* const* params, void* const* state,
                    void* const* inputs, void* const* outputs, void* arena) {
  (void)state, (void)arena;
  if (checkTokens(host, (const int32_t*)inputs[0])) return 1;
  *(float*)outputs[0] = crossEntropy((const float*)params[0], (const float*)params[1],
                                     (const int32_t*)inputs[0], (const int32_t*)inputs[1], NULL);
  return 0;
}

static void adamw(float* p, const float* g, float* m, float* v, int n, float lr, float wd,
                  float b1, float b2, float eps, int64_t t, float scale) {
  float c1 = 1.0f - powf(b1, (float)t), c2 = 1.0f - powf(b2, (float)t);
  for (int i = 0; i < n; ++i) {
    float grad = g[i] * scale;
    m[i] = b1 * m[i] + (1.0f - b1) * grad;
    v[i] = b2 * v[i] + (1.0f - b2) * grad * grad;
    p[i] -= lr * (m[i] / c1) / (sqrtf(v[i] / c2) + eps) + lr * wd * p[i];
  }
}

static int32_t trainStep(const tfc_host_api_t* host, void* const* params, void* const* state,
                         void* const* inputs, void* const* outputs, void* arena) {
  const int32_t* tokens = (const int32_t*)inputs[0];
  const int32_t* targets = (const int32_t*)inputs[1];
  if (checkTokens(host, tokens)) return 1;
  float h[10];
  for (int i = 0; i < 10; ++i) h[i] = *(const float*)inputs[2 + i];
  float peak = h[0], minLr = h[1], warmup = h[2], total = h[3], clip = h[6];
  int schedule = (int)h[4];
  float* wte = (float*)params[0];
  float* bias = (float*)params[1];
  float* dlogits = (float*)arena; /* B*T*V */
  float gw[V * V], gb[V];
  memset(gw, 0, sizeof(gw));
  memset(gb, 0, sizeof(gb));
  float value = crossEntropy(wte, bias, tokens, targets, dlogits);
  for (int i = 0; i < B * T; ++i) {
    for (int v = 0; v < V; ++v) {
      gw[tokens[i] * V + v] += dlogits[i * V + v];
      gb[v] += dlogits[i * V + v];
    }
  }
  double norm2 = 0.0;
  for (int i = 0; i < V * V; ++i) norm2 += (double)gw[i] * gw[i];
  for (int i = 0; i < V; ++i) norm2 += (double)gb[i] * gb[i];
  float norm = (float)sqrt(norm2);
  float scale = clip > 0.0f && norm > clip ? clip / (norm + 1e-6f) : 1.0f;
  int64_t* step = (int64_t*)state[4];
  int64_t t = ++*step;
  float lr = peak;
  if (schedule != 0) {
    if ((float)t <= warmup && warmup > 0.0f) {
      lr = peak * (float)t / warmup;
    } else {
      float progress = total > warmup ? ((float)t - warmup) / (total - warmup) : 1.0f;
      if (progress > 1.0f) progress = 1.0f;
      float decay = schedule == 1 ? 1.0f - progress : 0.5f * (1.0f + cosf(3.14159265f * progress));
      lr = minLr + (peak - minLr) * decay;
    }
  }
  adamw(wte, gw, (float*)state[0], (float*)state[1], V * V, lr, h[5], h[7], h[8], h[9], t, scale);
  adamw(bias, gb, (float*)state[2], (float*)state[3], V, lr, 0.0f, h[7], h[8], h[9], t, scale);
  *(float*)outputs[0] = value;
  *(float*)outputs[1] = lr;
  *(float*)outputs[2] = norm;
  return 0;
}

/* logits[b, :] of token tokens[b * stride + index]; positions [pos, pos + count) must be
 * rows of the (imaginary) position embedding, as in a compiled model. */
static int32_t lastLogits(const tfc_host_api_t* host, void* const* params, const int32_t* tokens,
                          int stride, int index, int32_t pos, int count, float* logits) {
  if (pos < 0 || (int64_t)pos + count > NCTX) {
    host->report_error(host->user, "embedding: id out of range");
    return 1;
  }
  const float* wte = (const float*)params[0];
  const float* bias = (const float*)params[1];
  for (int b = 0; b < B; ++b) {
    int32_t token = tokens[b * stride + index];
    if (token < 0 || token >= V) {
      host->report_error(host->user, "embedding: id out of range");
      return 1;
    }
    for (int v = 0; v < V; ++v) logits[b * V + v] = wte[token * V + v] + bias[v];
  }
  return 0;
}

static int32_t prefill(const tfc_host_api_t* host, void* const* params, void* const* state,
                       void* const* inputs, void* const* outputs, void* arena) {
  (void)state, (void)arena;
  int32_t n = *(const int32_t*)inputs[2];
  int32_t last = (int32_t)((uint32_t)n - 1u); /* dynamic_slice(h, n - 1) in int32 */
  if (last < 0) last = 0;
  if (last > P - 1) last = P - 1;
  return lastLogits(host, params, (const int32_t*)inputs[0], P, last, *(const int32_t*)inputs[1],
                    P, (float*)outputs[0]);
}

static int32_t decode(const tfc_host_api_t* host, void* const* params, void* const* state,
                      void* const* inputs, void* const* outputs, void* arena) {
  (void)state, (void)arena;
  return lastLogits(host, params, (const int32_t*)inputs[0], 1, 0, *(const int32_t*)inputs[1], 1,
                    (float*)outputs[0]);
}

static int32_t decodeRows(const tfc_host_api_t* host, void* const* params, void* const* state,
                          void* const* inputs, void* const* outputs, void* arena) {
  (void)state, (void)arena;
  const int32_t* tokens = (const int32_t*)inputs[0];
  const int32_t* pos = (const int32_t*)inputs[1];
  float* logits = (float*)outputs[0];
  for (int b = 0; b < B; ++b) {
    if (pos[b] < 0 || pos[b] >= NCTX) {
      host->report_error(host->user, "kv_cache_update: position out of range");
      return 1;
    }
  }
  /* Row b alone: lastLogits reads B rows, so one row at a time through a one-row copy. */
  for (int b = 0; b < B; ++b) {
    int32_t rows[B] = {tokens[b], tokens[b]};
    float out[B * V];
    if (lastLogits(host, params, rows, 1, 0, pos[b], 1, out)) return 1;
    memcpy(logits + b * V, out, sizeof(float) * V);
  }
  return 0;
}

static int32_t prefillRow(const tfc_host_api_t* host, void* const* params, void* const* state,
                          void* const* inputs, void* const* outputs, void* arena) {
  (void)state, (void)arena;
  const int32_t* tokens = (const int32_t*)inputs[0];
  int32_t row = *(const int32_t*)inputs[1], pos = *(const int32_t*)inputs[2];
  int32_t n = *(const int32_t*)inputs[3];
  if (row < 0 || row >= B) {
    host->report_error(host->user, "kv_cache_update: position out of range");
    return 1;
  }
  int32_t last = (int32_t)((uint32_t)n - 1u);
  if (last < 0) last = 0;
  if (last > P - 1) last = P - 1;
  int32_t rows[B * P];
  for (int b = 0; b < B; ++b) memcpy(rows + b * P, tokens, sizeof(int32_t) * P);
  float out[B * V];
  if (lastLogits(host, params, rows, P, last, pos, P, out)) return 1;
  memcpy(outputs[0], out, sizeof(float) * V);
  return 0;
}

/* SplitMix64's finalizer: a noise in [0, 1) from (seed, row, id). */
static double noise(uint64_t seed, int row, int id) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + (uint64_t)(row * V + id + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

static int32_t sample(const tfc_host_api_t* host, void* const* params, void* const* state,
                      void* const* inputs, void* const* outputs, void* arena) {
  (void)host, (void)params, (void)state, (void)arena;
  const float* logits = (const float*)inputs[0];
  float temperature = *(const float*)inputs[1];
  uint64_t seed = (uint64_t)*(const int64_t*)inputs[4];
  int32_t* ids = (int32_t*)outputs[0];
  for (int b = 0; b < B; ++b) {
    int best = 0;
    double bestScore = -INFINITY;
    for (int v = 0; v < V; ++v) {
      double score = temperature > 0.0f
                         ? logits[b * V + v] / temperature - log(-log(noise(seed, b, v) + 1e-12))
                         : logits[b * V + v];
      if (score > bestScore) bestScore = score, best = v;
    }
    ids[b] = best;
  }
  return 0;
}

static const tfc_entry_t kEntries[] = {
    {"forward", 1, 1, kForwardIn, kForwardOut, 0, 1, forward},
    {"loss", 2, 1, kLossIn, kLossOut, 0, 1, loss},
    {"train_step", 12, 3, kTrainIn, kTrainOut, sizeof(float) * B * T * V, 1, trainStep},
    {"prefill", 3, 1, kPrefillIn, kLastLogits, 0, 1, prefill},
    {"decode", 2, 1, kDecodeIn, kLastLogits, 0, 1, decode},
    {"sample", 5, 1, kSampleIn, kSampleOut, 0, 1, sample},
    {"decode_rows", 2, 1, kDecodeRowsIn, kLastLogits, 0, 1, decodeRows},
    {"prefill_row", 4, 1, kPrefillRowIn, kRowLogits, 0, 1, prefillRow},
};

static const tfc_artifact_t kArtifact = {
    TFC_ARTIFACT_MAGIC,
    TFC_ARTIFACT_ABI_VERSION,
    sizeof(tfc_artifact_t),
    0,
    "x86_64-unknown-linux-gnu:fake",
    "tfc 0.1.0 (fake training artifact)",
#ifdef FAKE_OTHER_HASH
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
#else
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
#endif
    "{\"model\": \"fake-bigram\", \"config\": {\"vocab_size\": 16, \"batch\": 2, \"seq\": 8, \"n_ctx\": 8, "
    "\"prefill_len\": 4}}",
    (int32_t)(sizeof(kParams) / sizeof(kParams[0])),
    (int32_t)(sizeof(kState) / sizeof(kState[0])),
    (int32_t)(sizeof(kEntries) / sizeof(kEntries[0])),
    0,
    kParams,
    kState,
    kEntries,
};

_Static_assert(TFC_ARTIFACT_ABI_VERSION == 6, "rename tfc_artifact_v6 below to the new version");
EXPORT const tfc_artifact_t* tfc_artifact_v6(void) { return &kArtifact; }
