/* A stand-in for a compiled LLaMA-like model with Hugging Face's parameter names and mixed
 * dtypes, for the tests of tfc_params_load_pretrained (pretrained_load_test.cpp). It has no
 * entry points: only its parameters matter.
 *
 * Parameters: model.embed_tokens.weight f32[16, 8], model.layers.0.self_attn.q_proj.weight
 *             bf16[8, 8], model.layers.0.input_layernorm.weight f16[8], model.norm.weight
 *             f32[8], lm_head.weight bf16[16, 8]
 */
#include <stddef.h>
#include <stdint.h>

#include "tfc/artifact_abi.h"

#define EXPORT __attribute__((visibility("default")))

static const int64_t kShapeVD[] = {16, 8};
static const int64_t kShapeDD[] = {8, 8};
static const int64_t kShapeD[] = {8};

static const tfc_tensor_desc_t kParams[] = {
    {"model.embed_tokens.weight", TFC_ABI_F32, 2, kShapeVD, "normal(0.0, 0.02)", 0, 0},
    {"model.layers.0.self_attn.q_proj.weight", TFC_ABI_BF16, 2, kShapeDD, "normal(0.0, 0.02)",
     0, 0},
    {"model.layers.0.input_layernorm.weight", TFC_ABI_F16, 1, kShapeD, "ones", 0, 0},
    {"model.norm.weight", TFC_ABI_F32, 1, kShapeD, "ones", 0, 0},
    {"lm_head.weight", TFC_ABI_BF16, 2, kShapeVD, "normal(0.0, 0.02)", 0, 0},
};

static const tfc_artifact_t kArtifact = {
    TFC_ARTIFACT_MAGIC,
    TFC_ARTIFACT_ABI_VERSION,
    sizeof(tfc_artifact_t),
    0,
    "x86_64-unknown-linux-gnu:fake",
    "tfc 0.1.0 (fake artifact)",
    "fedcba9876543210",
    "{\"model\": \"fake_pretrained\"}",
    (int32_t)(sizeof(kParams) / sizeof(kParams[0])),
    0,
    0,
    0,
    kParams,
    NULL,
    NULL,
    TFC_DEVICE_CPU,
    0,
    NULL,
    NULL,
    NULL,
    0,
    NULL,
};

_Static_assert(TFC_ARTIFACT_ABI_VERSION == 6, "rename tfc_artifact_v6 below to the new version");
EXPORT const tfc_artifact_t* tfc_artifact_v6(void) { return &kArtifact; }
