//===- GPT2.cpp - GPT-2, exactly as Hugging Face's GPT2LMHeadModel --------===//
//
// Parameter names, shapes and layouts are those of HF's `model.safetensors`
// for GPT-2, so a real checkpoint binds as is:
//
//   wte.weight (V, C)  wpe.weight (n_ctx, C)
//   h.{i}.ln_1.{weight,bias} (C)
//   h.{i}.attn.c_attn.weight (C, 3C)   .bias (3C)    Conv1D: y = x @ W + b
//   h.{i}.attn.c_proj.weight (C, C)    .bias (C)
//   h.{i}.ln_2.{weight,bias} (C)
//   h.{i}.mlp.c_fc.weight (C, 4C)      .bias (4C)
//   h.{i}.mlp.c_proj.weight (4C, C)    .bias (C)
//   ln_f.{weight,bias} (C)
//
// The LM head is tied to wte (logits = h @ wte^T). Pre-norm blocks, GELU with
// the tanh approximation (HF's gelu_new; activation=gelu for the exact one),
// layer norm eps layer_norm_eps, causal attention scaled by 1/sqrt(head dim).
// wpe has n_positions rows (n_ctx unless set), the MLP n_inner (4C unless
// set). Initialization as HF: normal(0, 0.02), the two c_proj
// weights normal(0, 0.02/sqrt(2 n_layer)), biases zeros, norm weights ones.
//
//===----------------------------------------------------------------------===//
#include "compiler/frontend/models/Common.h"
#include "compiler/frontend/models/Model.h"

#include <cmath>

namespace tfc::frontend {
namespace {

struct GPT2Config {
  int64_t nLayer, nHead, nEmbd, vocab, nCtx, nPositions, nInner;
  float layerNormEps;
  GeluApprox activation;
};

class GPT2 : public CausalLM {
public:
  GPT2(Graph &g, const GPT2Config &config) : g(g), c(config) {}

  Tensor hidden(Tensor tokens, const KVCacheStep *cache) override {
    const int64_t T = tokens.dim(1), C = c.nEmbd;
    Tensor x;
    {
      auto scope = g.scope("embeddings");
      Tensor wte = tokenEmbeddings();
      Tensor wpe = g.param("wpe.weight", {c.nPositions, C}, DType::F32,
                           normalInit(0.02));
      Tensor tok = embedding(wte, tokens);         // (B, T, C)
      Tensor positions = iota(g, {T}, DType::I32); // (T)
      if (cache && cache->pos.rank() == 1) // a position per row: (B, T)
        positions = reshape(positions, {1, T}) +
                    reshape(cache->pos, {cache->pos.dim(0), 1});
      else if (cache)
        positions = positions + cache->pos;
      Tensor pos = embedding(wpe, positions); // (T, C) or (B, T, C)
      x = drop(tok + pos);                    // (B, T, C), embd_pdrop
    }
    for (int64_t i = 0; i < c.nLayer; ++i) {
      std::string h = "h." + std::to_string(i);
      auto scope = g.scope(h);
      // resid_pdrop on both branches (attention-probability dropout is not
      // modelled: tfc.attention never forms the probabilities).
      x = x + drop(attention(h, i, layerNorm(h + ".ln_1", x), cache));
      x = x + drop(mlp(h, layerNorm(h + ".ln_2", x))); // (B, T, C)
    }
    return x;
  }

  Tensor logits(Tensor h) override {
    Tensor x = layerNorm("ln_f", h); // (..., C)
    auto scope = g.scope("lm_head");
    // Tied to wte (V, C): x @ wte^T, (..., V)
    return linear(x, tokenEmbeddings(), {}, /*transposeWeight=*/true);
  }

private:
  Tensor drop(Tensor x) { return dropout ? (*dropout)(x) : x; }

  Tensor tokenEmbeddings() {
    return g.param("wte.weight", {c.vocab, c.nEmbd}, DType::F32,
                   normalInit(0.02));
  }

  /// x (..., C) -> (..., C), with `name`.weight and `name`.bias.
  Tensor layerNorm(const std::string &name, Tensor x) {
    auto scope = g.scope(name.substr(name.rfind('.') + 1));
    Tensor w = g.param(name + ".weight", {c.nEmbd}, DType::F32, "ones");
    Tensor b = g.param(name + ".bias", {c.nEmbd}, DType::F32, "zeros");
    return frontend::layerNorm(x, w, b, c.layerNormEps);
  }

  /// Conv1D: x (..., in) @ W (in, out) + b (out).
  Tensor conv1d(const std::string &name, Tensor x, int64_t in, int64_t out,
                double std) {
    Tensor w = g.param(name + ".weight", {in, out}, DType::F32, normalInit(std));
    Tensor b = g.param(name + ".bias", {out}, DType::F32, "zeros");
    return linear(x, w, b);
  }

  /// Scaled init of the projections that write into the residual stream.
  double residualStd() const { return 0.02 / std::sqrt(2.0 * c.nLayer); }

  /// x (B, T, C) -> (B, T, C)
  Tensor attention(const std::string &h, int64_t layer, Tensor x,
                   const KVCacheStep *cache) {
    auto scope = g.scope("attn");
    const int64_t C = c.nEmbd;
    Tensor qkv = conv1d(h + ".attn.c_attn", x, C, 3 * C, 0.02); // (B, T, 3C)
    // Megatron's tensor parallelism: the fused [Q | K | V] column-parallel
    // (each rank its heads of each), the output projection row-parallel.
    g.shard(h + ".attn.c_attn.weight", "column", /*blocks=*/3);
    Tensor q = splitHeads(sliceLastDim(qkv, 0, C), c.nHead);     // (B, H, T, D)
    Tensor k = splitHeads(sliceLastDim(qkv, C, 2 * C), c.nHead); // (B, H, T, D)
    Tensor v = splitHeads(sliceLastDim(qkv, 2 * C, 3 * C), c.nHead);
    Tensor y = causalSelfAttention(g, layer, q, k, v, cache); // (B, H, T, D)
    y = mergeHeads(y);                                        // (B, T, C)
    Tensor out = conv1d(h + ".attn.c_proj", y, C, C, residualStd());
    g.shard(h + ".attn.c_proj.weight", "row");
    return out; // (B, T, C)
  }

  /// x (B, T, C) -> (B, T, C)
  Tensor mlp(const std::string &h, Tensor x) {
    auto scope = g.scope("mlp");
    const int64_t C = c.nEmbd, F = c.nInner;
    Tensor u = conv1d(h + ".mlp.c_fc", x, C, F, 0.02); // (B, T, F)
    g.shard(h + ".mlp.c_fc.weight", "column");
    u = gelu(u, c.activation);
    Tensor out = conv1d(h + ".mlp.c_proj", u, F, C, residualStd());
    g.shard(h + ".mlp.c_proj.weight", "row");
    return out; // (B, T, C)
  }

  Graph &g;
  GPT2Config c;
};

void validate(const ModelConfig &cfg) {
  cfg.require(cfg.size("n_layer") <= kMaxLayers,
              "n_layer (" + cfg.text("n_layer") + ") must be at most " +
                  llvm::Twine(kMaxLayers));
  int64_t nEmbd = cfg.size("n_embd"), nHead = cfg.size("n_head"),
          nCtx = cfg.size("n_ctx");
  cfg.require(nEmbd % nHead == 0, "n_embd (" + llvm::Twine(nEmbd) +
                                      ") must be divisible by n_head (" +
                                      llvm::Twine(nHead) + ")");
  int64_t nPositions = cfg.size("n_positions");
  cfg.require(nPositions == 0 || nCtx <= nPositions,
              "n_ctx (" + llvm::Twine(nCtx) +
                  ") must not exceed n_positions (" + llvm::Twine(nPositions) +
                  "), the rows of wpe");
  double eps = cfg.number("layer_norm_eps");
  cfg.require(eps >= 0 && eps < 1, "layer_norm_eps (" +
                                       cfg.text("layer_norm_eps") +
                                       ") must be in [0, 1)");
  cfg.require(cfg.size("seq") <= nCtx,
              "seq (" + llvm::Twine(cfg.size("seq")) +
                  ") must not exceed n_ctx (" + llvm::Twine(nCtx) + ")");
  double dropout = cfg.number("dropout");
  cfg.require(dropout >= 0.0 && dropout < 1.0,
              "dropout (" + llvm::Twine(std::to_string(dropout)) + ") must be in [0, 1)");
  cfg.require(cfg.size("prefill_len") <= nCtx,
              "prefill_len (" + llvm::Twine(cfg.size("prefill_len")) +
                  ") must not exceed n_ctx (" + llvm::Twine(nCtx) + ")");
}

void build(Graph &g, const ModelConfig &cfg) {
  int64_t nCtx = cfg.size("n_ctx"), nEmbd = cfg.size("n_embd");
  int64_t nPositions = cfg.size("n_positions"), nInner = cfg.size("n_inner");
  GPT2Config config{cfg.size("n_layer"),
                    cfg.size("n_head"),
                    nEmbd,
                    cfg.size("vocab_size"),
                    nCtx,
                    nPositions ? nPositions : nCtx,
                    nInner ? nInner : 4 * nEmbd,
                    (float)cfg.number("layer_norm_eps"),
                    cfg.text("activation") == "gelu" ? GeluApprox::None
                                                     : GeluApprox::Tanh};
  GPT2 model(g, config);
  DropoutSites dropout(cfg.number("dropout"));
  model.dropout = &dropout;
  CausalLMSizes sizes{cfg.size("batch"), cfg.size("gen_batch"),
                      cfg.size("seq"),   cfg.size("prefill_len"),
                      config.nCtx,       config.nEmbd,
                      config.vocab};
  readPagedCache(cfg, sizes);
  addCausalLMEntries(g, model, sizes);
}

} // namespace

ModelInfo gpt2Model() {
  using K = ModelOption::Kind;
  ModelInfo info;
  info.name = "gpt2";
  info.summary = "GPT-2 with Hugging Face parameter names and layouts "
                 "(tied LM head, GELU tanh, learned positions)";
  info.options = {
      {"n_layer", K::Size, "2", "number of transformer blocks"},
      {"n_head", K::Size, "4", "attention heads (must divide n_embd)"},
      {"n_embd", K::Size, "64", "model width C"},
      {"vocab_size", K::Size, "256", "vocabulary size V"},
      {"n_ctx", K::Size, "64", "maximum context: length of the KV cache"},
      {"n_positions", K::Size, "0", "rows of wpe (0: n_ctx)", {},
       /*allowZero=*/true},
      {"n_inner", K::Size, "0", "MLP width (0: 4 n_embd)", {},
       /*allowZero=*/true},
      {"layer_norm_eps", K::Number, "1e-5", "layer norm epsilon"},
      {"activation", K::Choice, "gelu_new",
       "MLP activation: GELU with the tanh approximation, or exact",
       {"gelu_new", "gelu"}},
      {"batch", K::Size, "2", "batch size B of forward, loss and training"},
      {"gen_batch", K::Size, "1",
       "batch size of prefill, decode and sample (generation; the KV cache)"},
      {"seq", K::Size, "16", "tokens per row T of forward and loss"},
      {"prefill_len", K::Size, "16", "tokens per prefill chunk P"},
      {"dropout", K::Number, "0",
       "dropout rate of the training loss (0 = off); adds loss_train"},
  };
  addPagedCacheOptions(info.options);
  info.options.push_back({"preset", K::Preset, "", "a named architecture (gpt2-124m)"});
  info.presets = {
      {"gpt2-124m", "Hugging Face `gpt2` (GPT-2 small, 124M parameters)",
       {{"n_layer", "12"},
        {"n_head", "12"},
        {"n_embd", "768"},
        {"vocab_size", "50257"},
        {"n_ctx", "1024"}}},
  };
  info.validate = validate;
  info.build = build;
  return info;
}

} // namespace tfc::frontend
