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
// with `.bias` next to q/k/v/o_proj (attention_bias=1: LLaMA's
// `attention_bias`), to q/k/v_proj only (qkv_bias=1: Qwen2) and to the MLP's
// three projections (mlp_bias=1). Dh is head_dim, or D / H when it is 0.
//
// Pre-norm blocks with RMSNorm, rotary positions (rotate-half, theta
// rope_theta, optionally scaled as HF's rope_scaling of type linear or
// llama3) on queries and keys, grouped-query attention (n_kv_head divides
// n_head), SwiGLU MLP: down(silu(gate(x)) * up(x)). Init as HF: normal(0,
// 0.02) for every linear and the embeddings, norm weights ones, biases zeros.
// The same model serves HF's MistralForCausalLM (a sliding window that the
// context never exceeds) and Qwen2ForCausalLM (qkv_bias).
//
// With n_expert > 0 (the `mixtral` model, HF's MixtralForCausalLM) the MLP
// is Mixtral's sparse MoE block instead:
//
//   model.layers.{i}.block_sparse_moe.gate.weight (E, D)
//   model.layers.{i}.block_sparse_moe.experts.{e}.w1.weight (F, D)  gate
//   model.layers.{i}.block_sparse_moe.experts.{e}.w3.weight (F, D)  up
//   model.layers.{i}.block_sparse_moe.experts.{e}.w2.weight (D, F)  down
//
// Router logits (N, E), the top-k experts by f32 softmax (tfc.moe_route),
// routing weights = the softmax renormalized over the chosen k, which is the
// softmax of the chosen logits (composed here from differentiable ops, so the
// router learns through them), then the dropless grouped experts
// (tfc.moe_ffn). The loss adds router_aux_loss_coef times the Switch
// Transformer load-balancing loss over every layer's router logits, as HF's
// `load_balancing_loss_func` (without an attention mask).
//
//===----------------------------------------------------------------------===//
#include "compiler/frontend/models/Common.h"
#include "compiler/frontend/models/Model.h"

#include <cmath>

namespace tfc::frontend {
namespace {

/// HF's `rope_scaling`: how the rotary frequencies theta^(-2i/Dh) change.
struct RopeScaling {
  std::string type; ///< "none", "linear" or "llama3"
  double factor, lowFreqFactor, highFreqFactor;
  int64_t originalContext;
};

struct LlamaConfig {
  int64_t nLayer, nHead, nKvHead, dim, hiddenDim, vocab, nCtx, headDimOption;
  float rmsEps, ropeTheta;
  bool tieEmbeddings, attentionBias, qkvBias, mlpBias;
  RopeScaling rope;
  int64_t nExpert = 0, nExpertPerTok = 0; ///< nExpert 0: a dense SwiGLU MLP
  double routerAuxLossCoef = 0;
  int64_t headDim() const {
    return headDimOption ? headDimOption : dim / nHead;
  }
};

/// The Dh/2 rotary frequencies of a scaled rotary embedding, as HF's
/// `_compute_linear_scaling_rope_parameters` and
/// `_compute_llama3_parameters` compute them (in double here, rounded once).
std::vector<double> scaledRopeFrequencies(int64_t headDim, double theta,
                                          const RopeScaling &rope) {
  std::vector<double> freqs;
  for (int64_t i = 0; i < headDim; i += 2) {
    double base = 1.0 / std::pow(theta, double(i) / double(headDim));
    if (rope.type == "linear") {
      freqs.push_back(base / rope.factor);
      continue;
    }
    // llama3: long wavelengths (low frequencies) are slowed by `factor`,
    // short ones kept, and the band between interpolated smoothly.
    double context = double(rope.originalContext);
    double lowWavelen = context / rope.lowFreqFactor;
    double highWavelen = context / rope.highFreqFactor;
    double wavelen = 2.0 * M_PI / base;
    double f = base;
    if (wavelen > lowWavelen) {
      f = base / rope.factor;
    } else if (wavelen >= highWavelen) {
      double smooth = (context / wavelen - rope.lowFreqFactor) /
                      (rope.highFreqFactor - rope.lowFreqFactor);
      f = (1.0 - smooth) * base / rope.factor + smooth * base;
    }
    freqs.push_back(f);
  }
  return freqs;
}

class Llama : public CausalLM {
public:
  Llama(Graph &g, const LlamaConfig &config) : g(g), c(config) {}

  Tensor hidden(Tensor tokens, const KVCacheStep *cache) override {
    routing.clear();
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
      x = x + (c.nExpert ? sparseMoe(layer, m) : mlp(layer, m)); // (B, T, D)
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

  std::optional<Tensor> auxiliaryLoss() override {
    if (!c.nExpert || c.routerAuxLossCoef == 0)
      return std::nullopt;
    return loadBalancingLoss() * c.routerAuxLossCoef;
  }

  bool hasRouter() const override { return c.nExpert > 0; }
  Tensor routerLoss() override { return loadBalancingLoss(); }

private:
  /// A layer's routing, kept for the load-balancing loss.
  struct Routing {
    Tensor logits; ///< (N, E)
    Tensor chosen; ///< (N, E) f32: 1 where the token chose the expert
  };

  /// HF's load_balancing_loss_func over the rows of every layer of the last
  /// hidden(): E * sum_e f_e * P_e, f_e the fraction of (row, slot) choices
  /// of expert e (summed over the k slots), P_e its mean probability. Only
  /// P is differentiable: the counts are constants, as in torch.
  Tensor loadBalancingLoss() {
    auto scope = g.scope("router_aux_loss");
    std::vector<Tensor> logits, chosen;
    for (const Routing &r : routing) {
      logits.push_back(r.logits);
      chosen.push_back(r.chosen);
    }
    Tensor probs = softmax(concat(logits, 0), -1);               // (L*N, E)
    Tensor meanProb = reduceMean(probs, {0});                    // (E)
    Tensor fraction = reduceMean(concat(chosen, 0), {0});        // (E)
    return reduceSum(fraction * meanProb, {0}) * double(c.nExpert); // ()
  }

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

  /// torch.nn.Linear: x (..., in) @ W^T (+ b), W (out, in), b (out).
  Tensor proj(const std::string &name, Tensor x, int64_t in, int64_t out,
              bool bias, const char *shard = nullptr) {
    Tensor w = g.param(name + ".weight", {out, in}, DType::F32,
                       normalInit(0.02));
    if (shard) // Megatron's tensor parallelism: "column" or "row"
      g.shard(name + ".weight", shard);
    std::optional<Tensor> b;
    if (bias)
      b = g.param(name + ".bias", {out}, DType::F32, "zeros");
    return linear(x, w, b, /*transposeWeight=*/true);
  }

  /// The scaled rotary frequencies as a constant, or none for theta's own.
  std::optional<Tensor> ropeFrequencies() {
    if (c.rope.type == "none")
      return std::nullopt;
    std::vector<double> f =
        scaledRopeFrequencies(c.headDim(), c.ropeTheta, c.rope);
    return constant(g, {(int64_t)f.size()}, DType::F32, f);
  }

  /// x (B, T, D) -> (B, T, D)
  Tensor selfAttention(const std::string &layer, int64_t index, Tensor x,
                       const KVCacheStep *cache) {
    auto scope = g.scope("self_attn");
    const std::string p = layer + ".self_attn.";
    const int64_t D = c.dim, Dh = c.headDim();
    const bool qkvBias = c.attentionBias || c.qkvBias;
    Tensor q = proj(p + "q_proj", x, D, c.nHead * Dh, qkvBias, "column"); // (B, T, H*Dh)
    Tensor k = proj(p + "k_proj", x, D, c.nKvHead * Dh, qkvBias, "column");
    Tensor v = proj(p + "v_proj", x, D, c.nKvHead * Dh, qkvBias, "column");
    q = splitHeads(q, c.nHead);                          // (B, H, T, Dh)
    k = splitHeads(k, c.nKvHead);                        // (B, Hkv, T, Dh)
    v = splitHeads(v, c.nKvHead);                        // (B, Hkv, T, Dh)
    std::optional<Tensor> offset;
    if (cache)
      offset = cache->pos;
    std::optional<Tensor> freqs = ropeFrequencies();
    q = rotary(q, c.ropeTheta, offset, freqs);
    k = rotary(k, c.ropeTheta, offset, freqs);
    Tensor y = causalSelfAttention(g, index, q, k, v, cache); // (B, H, T, Dh)
    y = mergeHeads(y);                                        // (B, T, H*Dh)
    return proj(p + "o_proj", y, c.nHead * Dh, D, c.attentionBias, "row");
  }

  /// SwiGLU: x (B, T, D) -> (B, T, D)
  Tensor mlp(const std::string &layer, Tensor x) {
    auto scope = g.scope("mlp");
    const std::string p = layer + ".mlp.";
    const int64_t D = c.dim, F = c.hiddenDim;
    Tensor gate = proj(p + "gate_proj", x, D, F, c.mlpBias, "column"); // (B, T, F)
    Tensor up = proj(p + "up_proj", x, D, F, c.mlpBias, "column");     // (B, T, F)
    return proj(p + "down_proj", silu(gate) * up, F, D, c.mlpBias,
                "row");
  }

  /// Mixtral's sparse MoE block: x (B, T, D) -> (B, T, D).
  Tensor sparseMoe(const std::string &layer, Tensor x) {
    auto scope = g.scope("block_sparse_moe");
    const std::string p = layer + ".block_sparse_moe.";
    const int64_t D = c.dim, F = c.hiddenDim, E = c.nExpert;
    const int64_t N = x.dim(0) * x.dim(1);
    Tensor flat = reshape(x, {N, D});
    Tensor logits = proj(p + "gate", flat, D, E, false); // (N, E)
    Tensor ids = moeRoute(logits, c.nExpertPerTok);      // (N, k) i32
    // One-hot rows of the identity, summed over the k slots: (N, E).
    std::vector<double> eye(E * E, 0.0);
    for (int64_t e = 0; e < E; ++e)
      eye[e * E + e] = 1.0;
    Tensor chosen =
        reduceSum(embedding(constant(g, {E, E}, DType::F32, eye), ids), {1});
    routing.push_back({logits, chosen});
    // softmax over the chosen logits = the top-k probabilities renormalized;
    // the others get exp(-1e30 - max) = 0 exactly.
    Tensor weights = softmax(logits + (chosen - 1.0) * 1.0e30, -1); // (N, E)
    std::vector<Tensor> experts;
    for (int64_t e = 0; e < E; ++e) {
      std::string q = p + "experts." + std::to_string(e) + ".";
      experts.push_back(
          g.param(q + "w1.weight", {F, D}, DType::F32, normalInit(0.02)));
      experts.push_back(
          g.param(q + "w3.weight", {F, D}, DType::F32, normalInit(0.02)));
      experts.push_back(
          g.param(q + "w2.weight", {D, F}, DType::F32, normalInit(0.02)));
    }
    Tensor y = moeFfn(flat, ids, weights, experts); // (N, D)
    return reshape(y, {x.dim(0), x.dim(1), D});
  }

  Graph &g;
  LlamaConfig c;
  std::vector<Routing> routing;
};

void validate(const ModelConfig &cfg) {
  cfg.require(cfg.size("n_layer") <= kMaxLayers,
              "n_layer (" + cfg.text("n_layer") + ") must be at most " +
                  llvm::Twine(kMaxLayers));
  int64_t dim = cfg.size("dim"), nHead = cfg.size("n_head"),
          nKvHead = cfg.size("n_kv_head"), nCtx = cfg.size("n_ctx");
  int64_t headDim = cfg.size("head_dim");
  if (headDim == 0) {
    cfg.require(dim % nHead == 0, "dim (" + llvm::Twine(dim) +
                                      ") must be divisible by n_head (" +
                                      llvm::Twine(nHead) +
                                      ") when head_dim is 0");
    headDim = dim / nHead;
  }
  cfg.require(nHead % nKvHead == 0,
              "n_kv_head (" + llvm::Twine(nKvHead) +
                  ") must divide n_head (" + llvm::Twine(nHead) + ")");
  cfg.require(headDim % 2 == 0, "the head dim (" + llvm::Twine(headDim) +
                                    ") must be even for rotary embeddings");
  int64_t window = cfg.size("sliding_window");
  cfg.require(window == 0 || window >= nCtx,
              "sliding_window (" + llvm::Twine(window) +
                  ") is shorter than n_ctx (" + llvm::Twine(nCtx) +
                  "): sliding-window attention is not supported; set "
                  "n_ctx to at most " + llvm::Twine(window) +
                  " so that the window never binds");
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
  const std::string &scaling = cfg.text("rope_scaling");
  if (scaling != "none") {
    double factor = cfg.number("rope_factor");
    cfg.require(factor >= 1, "rope_factor (" + cfg.text("rope_factor") +
                                 ") must be >= 1");
  }
  if (scaling == "llama3") {
    double low = cfg.number("rope_low_freq_factor"),
           high = cfg.number("rope_high_freq_factor");
    cfg.require(low > 0 && high > low,
                "rope_low_freq_factor (" + cfg.text("rope_low_freq_factor") +
                    ") and rope_high_freq_factor (" +
                    cfg.text("rope_high_freq_factor") +
                    ") must satisfy 0 < low < high");
  }
  cfg.require(!(cfg.flag("attention_bias") && cfg.flag("qkv_bias")),
              "attention_bias and qkv_bias are exclusive (attention_bias "
              "already puts biases on q, k and v)");
  if (cfg.model().findOption("n_expert")) {
    int64_t experts = cfg.size("n_expert"), topK = cfg.size("n_expert_per_tok");
    cfg.require(experts <= kMaxExperts,
                "n_expert (" + cfg.text("n_expert") + ") must be at most " +
                    llvm::Twine(kMaxExperts));
    cfg.require(topK <= experts, "n_expert_per_tok (" + llvm::Twine(topK) +
                                     ") must not exceed n_expert (" +
                                     llvm::Twine(experts) + ")");
    cfg.require(!cfg.flag("mlp_bias"),
                "mlp_bias is not supported with experts (Mixtral's experts "
                "have no biases)");
    double coef = cfg.number("router_aux_loss_coef");
    cfg.require(coef >= 0, "router_aux_loss_coef (" +
                               cfg.text("router_aux_loss_coef") +
                               ") must be >= 0");
  }
}

void build(Graph &g, const ModelConfig &cfg) {
  LlamaConfig config{cfg.size("n_layer"),
                     cfg.size("n_head"),
                     cfg.size("n_kv_head"),
                     cfg.size("dim"),
                     cfg.size("hidden_dim"),
                     cfg.size("vocab_size"),
                     cfg.size("n_ctx"),
                     cfg.size("head_dim"),
                     (float)cfg.number("rms_eps"),
                     (float)cfg.number("rope_theta"),
                     cfg.flag("tie_embeddings"),
                     cfg.flag("attention_bias"),
                     cfg.flag("qkv_bias"),
                     cfg.flag("mlp_bias"),
                     {cfg.text("rope_scaling"), cfg.number("rope_factor"),
                      cfg.number("rope_low_freq_factor"),
                      cfg.number("rope_high_freq_factor"),
                      cfg.size("rope_original_context")}};
  if (cfg.model().findOption("n_expert")) {
    config.nExpert = cfg.size("n_expert");
    config.nExpertPerTok = cfg.size("n_expert_per_tok");
    config.routerAuxLossCoef = cfg.number("router_aux_loss_coef");
  }
  Llama model(g, config);
  CausalLMSizes sizes{cfg.size("batch"), cfg.size("gen_batch"),
                      cfg.size("seq"),   cfg.size("prefill_len"),
                      config.nCtx,       config.dim,
                      config.vocab};
  readPagedCache(cfg, sizes);
  addCausalLMEntries(g, model, sizes);
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
      {"n_head", K::Size, "4", "query heads H"},
      {"n_kv_head", K::Size, "2",
       "key/value heads (must divide n_head; < n_head is GQA)"},
      {"dim", K::Size, "64", "model width D"},
      {"hidden_dim", K::Size, "176", "SwiGLU hidden width F"},
      {"vocab_size", K::Size, "256", "vocabulary size V"},
      {"n_ctx", K::Size, "64", "maximum context: length of the KV cache"},
      {"head_dim", K::Size, "0", "per-head width Dh (0: dim / n_head)", {},
       /*allowZero=*/true},
      {"rms_eps", K::Number, "1e-5", "RMSNorm epsilon"},
      {"rope_theta", K::Number, "10000", "rotary base theta"},
      {"rope_scaling", K::Choice, "none",
       "rotary scaling as HF's rope_scaling type",
       {"none", "linear", "llama3"}},
      {"rope_factor", K::Number, "8", "rope_scaling's factor"},
      {"rope_low_freq_factor", K::Number, "1",
       "llama3 scaling's low_freq_factor"},
      {"rope_high_freq_factor", K::Number, "4",
       "llama3 scaling's high_freq_factor"},
      {"rope_original_context", K::Size, "8192",
       "llama3 scaling's original_max_position_embeddings"},
      {"attention_bias", K::Flag, "0", "1: biases on q, k, v and o_proj"},
      {"qkv_bias", K::Flag, "0", "1: biases on q, k and v_proj only (Qwen2)"},
      {"mlp_bias", K::Flag, "0", "1: biases on gate, up and down_proj"},
      {"sliding_window", K::Size, "0",
       "attention window (Mistral); must be 0 (none) or >= n_ctx", {},
       /*allowZero=*/true},
      {"tie_embeddings", K::Flag, "0",
       "1: the LM head reuses model.embed_tokens.weight (no lm_head.weight)"},
      {"batch", K::Size, "2", "batch size B of forward, loss and training"},
      {"gen_batch", K::Size, "1",
       "batch size of prefill, decode and sample (generation; the KV cache)"},
      {"seq", K::Size, "16", "tokens per row T of forward and loss"},
      {"prefill_len", K::Size, "16", "tokens per prefill chunk P"},
  };
  addPagedCacheOptions(info.options);
  info.validate = validate;
  info.build = build;
  return info;
}

} // namespace tfc::frontend

namespace tfc::frontend {

ModelInfo mixtralModel() {
  using K = ModelOption::Kind;
  ModelInfo info = llamaModel();
  info.name = "mixtral";
  info.summary = "Mixtral with Hugging Face MixtralForCausalLM names (LLaMA "
                 "with a sparse mixture of SwiGLU experts per layer)";
  for (ModelOption &o : info.options)
    if (o.key == "hidden_dim")
      o.help = "SwiGLU hidden width F of each expert";
  info.options.insert(
      info.options.begin() + 5,
      {{"n_expert", K::Size, "4", "experts per layer E"},
       {"n_expert_per_tok", K::Size, "2",
        "experts each token is routed to (top-k)"},
       {"router_aux_loss_coef", K::Number, "0.001",
        "weight of the load-balancing loss added to the loss (0: none)"}});
  return info;
}

} // namespace tfc::frontend
