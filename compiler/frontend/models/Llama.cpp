//===- Llama.cpp - LLaMA, as Hugging Face's LlamaForCausalLM --------------===//
//
// Parameter names and layouts of HF's LlamaForCausalLM (torch.nn.Linear
// weights are (out, in), applied with transpose_weight):
//
//   model.embed_tokens.weight (V, D)
//   model.layers.{i}.input_layernorm.weight (D)
//   model.layers.{i}.self_attn.q_proj.weight (H*Dh, D)
//   model.layers.{i}.self_attn.{k,v}_proj.weight (Hkv*Dh, D)
//   model.layers.{i}.self_attn.o_proj.weight (D, H*Dh)
//   model.layers.{i}.post_attention_layernorm.weight (D)
//   model.layers.{i}.mlp.{gate,up}_proj.weight (F, D)
//   model.layers.{i}.mlp.down_proj.weight (D, F)
//   model.norm.weight (D)
//   lm_head.weight (V, D)                 (absent with tie_embeddings=1)
//
// Pre-norm blocks with RMSNorm, rotary positions (rotate-half, theta
// rope_theta) on queries and keys, grouped-query attention (n_kv_head divides
// n_head), SwiGLU MLP: down(silu(gate(x)) * up(x)). Init as HF: normal(0,
// 0.02) for every linear and the embeddings, norm weights ones.
//
//===----------------------------------------------------------------------===//
#include "compiler/frontend/models/Common.h"
#include "compiler/frontend/models/Model.h"

namespace tfc::frontend {
namespace {

struct LlamaConfig {
  int64_t nLayer, nHead, nKvHead, dim, hiddenDim, vocab, nCtx;
  float rmsEps, ropeTheta;
  bool tieEmbeddings;
  int64_t headDim() const { return dim / nHead; }
};

class Llama : public CausalLM {
public:
  Llama(Graph &g, const LlamaConfig &config) : g(g), c(config) {}

  Tensor hidden(Tensor tokens, const KVCacheStep *cache) override {
    Tensor x;
    {
      auto scope = g.scope("model.embed_tokens");
      x = embedding(tokenEmbeddings(), tokens); // (B, T, D)
    }
    for (int64_t i = 0; i < c.nLayer; ++i) {
      std::string layer = "model.layers." + std::to_string(i);
      auto scope = g.scope(layer);
      Tensor a = rmsNorm(layer + ".input_layernorm", x);
      x = x + selfAttention(layer, i, a, cache); // (B, T, D)
      Tensor m = rmsNorm(layer + ".post_attention_layernorm", x);
      x = x + mlp(layer, m); // (B, T, D)
    }
    return x;
  }

  Tensor logits(Tensor h) override {
    Tensor x = rmsNorm("model.norm", h); // (..., D)
    auto scope = g.scope("lm_head");
    Tensor head = c.tieEmbeddings
                      ? tokenEmbeddings()
                      : g.param("lm_head.weight", {c.vocab, c.dim},
                                DType::F32, normalInit(0.02));
    return linear(x, head, {}, /*transposeWeight=*/true); // (..., V)
  }

private:
  Tensor tokenEmbeddings() {
    return g.param("model.embed_tokens.weight", {c.vocab, c.dim}, DType::F32,
                   normalInit(0.02));
  }

  /// x (..., D) -> (..., D), with `name`.weight.
  Tensor rmsNorm(const std::string &name, Tensor x) {
    auto scope = g.scope(name.substr(name.rfind('.') + 1));
    Tensor w = g.param(name + ".weight", {c.dim}, DType::F32, "ones");
    return frontend::rmsNorm(x, w, c.rmsEps);
  }

  /// torch.nn.Linear without bias: x (..., in) @ W^T, W (out, in).
  Tensor proj(const std::string &name, Tensor x, int64_t in, int64_t out) {
    Tensor w = g.param(name + ".weight", {out, in}, DType::F32,
                       normalInit(0.02));
    return linear(x, w, {}, /*transposeWeight=*/true);
  }

  /// x (B, T, D) -> (B, T, D)
  Tensor selfAttention(const std::string &layer, int64_t index, Tensor x,
                       const KVCacheStep *cache) {
    auto scope = g.scope("self_attn");
    const std::string p = layer + ".self_attn.";
    const int64_t D = c.dim, Dh = c.headDim();
    Tensor q = proj(p + "q_proj", x, D, c.nHead * Dh);   // (B, T, H*Dh)
    Tensor k = proj(p + "k_proj", x, D, c.nKvHead * Dh); // (B, T, Hkv*Dh)
    Tensor v = proj(p + "v_proj", x, D, c.nKvHead * Dh); // (B, T, Hkv*Dh)
    q = splitHeads(q, c.nHead);                          // (B, H, T, Dh)
    k = splitHeads(k, c.nKvHead);                        // (B, Hkv, T, Dh)
    v = splitHeads(v, c.nKvHead);                        // (B, Hkv, T, Dh)
    std::optional<Tensor> offset;
    if (cache)
      offset = cache->pos;
    q = rotary(q, c.ropeTheta, offset);
    k = rotary(k, c.ropeTheta, offset);
    Tensor y = causalSelfAttention(g, index, q, k, v, cache); // (B, H, T, Dh)
    y = mergeHeads(y);                                        // (B, T, H*Dh)
    return proj(p + "o_proj", y, c.nHead * Dh, D);            // (B, T, D)
  }

  /// SwiGLU: x (B, T, D) -> (B, T, D)
  Tensor mlp(const std::string &layer, Tensor x) {
    auto scope = g.scope("mlp");
    const std::string p = layer + ".mlp.";
    Tensor gate = proj(p + "gate_proj", x, c.dim, c.hiddenDim); // (B, T, F)
    Tensor up = proj(p + "up_proj", x, c.dim, c.hiddenDim);     // (B, T, F)
    return proj(p + "down_proj", silu(gate) * up, c.hiddenDim, c.dim);
  }

  Graph &g;
  LlamaConfig c;
};

void validate(const ModelConfig &cfg) {
  int64_t dim = cfg.size("dim"), nHead = cfg.size("n_head"),
          nKvHead = cfg.size("n_kv_head"), nCtx = cfg.size("n_ctx");
  cfg.require(dim % nHead == 0, "dim (" + llvm::Twine(dim) +
                                    ") must be divisible by n_head (" +
                                    llvm::Twine(nHead) + ")");
  cfg.require(nHead % nKvHead == 0,
              "n_kv_head (" + llvm::Twine(nKvHead) +
                  ") must divide n_head (" + llvm::Twine(nHead) + ")");
  cfg.require((dim / nHead) % 2 == 0,
              "the head dim dim/n_head (" + llvm::Twine(dim / nHead) +
                  ") must be even for rotary embeddings");
  cfg.require(cfg.size("seq") <= nCtx,
              "seq (" + llvm::Twine(cfg.size("seq")) +
                  ") must not exceed n_ctx (" + llvm::Twine(nCtx) + ")");
  cfg.require(cfg.size("prefill_len") <= nCtx,
              "prefill_len (" + llvm::Twine(cfg.size("prefill_len")) +
                  ") must not exceed n_ctx (" + llvm::Twine(nCtx) + ")");
  double eps = cfg.number("rms_eps"), theta = cfg.number("rope_theta");
  cfg.require(eps >= 0 && eps < 1,
              "rms_eps (" + cfg.text("rms_eps") + ") must be in [0, 1)");
  cfg.require(theta > 1 && theta < 1.0e30,
              "rope_theta (" + cfg.text("rope_theta") +
                  ") must be > 1 (and < 1e30)");
}

void build(Graph &g, const ModelConfig &cfg) {
  LlamaConfig config{cfg.size("n_layer"),
                     cfg.size("n_head"),
                     cfg.size("n_kv_head"),
                     cfg.size("dim"),
                     cfg.size("hidden_dim"),
                     cfg.size("vocab_size"),
                     cfg.size("n_ctx"),
                     (float)cfg.number("rms_eps"),
                     (float)cfg.number("rope_theta"),
                     cfg.flag("tie_embeddings")};
  Llama model(g, config);
  addCausalLMEntries(g, model,
                     {cfg.size("batch"), cfg.size("gen_batch"), cfg.size("seq"),
                      cfg.size("prefill_len"), config.nCtx, config.dim,
                      config.vocab});
}

} // namespace

ModelInfo llamaModel() {
  using K = ModelOption::Kind;
  ModelInfo info;
  info.name = "llama";
  info.summary = "LLaMA with Hugging Face LlamaForCausalLM names (RMSNorm, "
                 "rotary, grouped-query attention, SwiGLU)";
  info.options = {
      {"n_layer", K::Size, "2", "number of decoder layers"},
      {"n_head", K::Size, "4", "query heads (must divide dim)"},
      {"n_kv_head", K::Size, "2",
       "key/value heads (must divide n_head; < n_head is GQA)"},
      {"dim", K::Size, "64", "model width D"},
      {"hidden_dim", K::Size, "176", "SwiGLU hidden width F"},
      {"vocab_size", K::Size, "256", "vocabulary size V"},
      {"n_ctx", K::Size, "64", "maximum context: length of the KV cache"},
      {"rms_eps", K::Number, "1e-5", "RMSNorm epsilon"},
      {"rope_theta", K::Number, "10000", "rotary base theta"},
      {"tie_embeddings", K::Flag, "0",
       "1: the LM head reuses model.embed_tokens.weight (no lm_head.weight)"},
      {"batch", K::Size, "2", "batch size B of forward, loss and training"},
      {"gen_batch", K::Size, "1",
       "batch size of prefill, decode and sample (generation; the KV cache)"},
      {"seq", K::Size, "16", "tokens per row T of forward and loss"},
      {"prefill_len", K::Size, "16", "tokens per prefill chunk P"},
  };
  info.validate = validate;
  info.build = build;
  return info;
}

} // namespace tfc::frontend
