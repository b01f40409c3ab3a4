//===- EncDec.cpp - the seed article's NumPy encoder-decoder --------------===//
//
// The model of docs/models/encdec.md (reference: docs/models/encdec_reference.py),
// one encoder block and one decoder block, pre-norm, with the spec's names:
//
//   embed.table (V, D)                 fixed orthonormal rows, frozen
//   {encoder,decoder}.mha.{wq,wk,wv} (H, P, P)   per-head P x P, no bias
//   {encoder,decoder}.mha.wo (D, D)
//   decoder.mhca.{wq,wk,wv} (H, P, P), decoder.mhca.wo (D, D)
//   {encoder,decoder}.ff.w1 (D, F), .b1 (F), .w2 (F, D), .b2 (D)
//   output.w (D, V), output.b (V)
//
// Norms are parameter-free RMS norms (eps 1e-8 inside the sqrt), the FF
// activation is leaky ReLU 0.1, positions are sinusoidal (a constant; no sqrt(D)
// scaling of the embeddings), scores are scaled by 1/sqrt(P), and the decoder
// output goes through a final norm before the output layer (Norm6).
//
// The loss is tfc.cross_entropy, i.e. the log-softmax form: the spec's 1e-8
// inside the log (article SparseCrossEntropy) is left out (spec §10.3).
// `embed.table` is declared with init "orthogonal(1.0)"; to reproduce the
// article exactly, load the table baked from numpy's QR (spec §2).
//
//===----------------------------------------------------------------------===//
#include "compiler/frontend/models/Common.h"
#include "compiler/frontend/models/Model.h"

#include <algorithm>
#include <cmath>

namespace tfc::frontend {
namespace {

constexpr float kNormEps = 1e-8f;
constexpr float kLeakySlope = 0.1f;
constexpr double kInitStd = 0.1;

struct EncDecConfig {
  int64_t dModel, nHead, ffDim, vocab;
  int64_t partSize() const { return dModel / nHead; }
};

/// PE[t, 2i] = sin(t w_i), PE[t, 2i+1] = cos(t w_i), w_i = 10000^(-2i/D).
/// Computed in double, stored as f32: (T, D).
Tensor sinusoidalPositions(Graph &g, int64_t T, int64_t D) {
  std::vector<double> table(T * D);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < D / 2; ++i) {
      double angle = t * std::pow(10000.0, -2.0 * i / D);
      table[t * D + 2 * i] = std::sin(angle);
      table[t * D + 2 * i + 1] = std::cos(angle);
    }
  }
  return constant(g, {T, D}, DType::F32, table);
}

class EncDec {
public:
  EncDec(Graph &g, const EncDecConfig &config) : g(g), c(config) {}

  /// The article's homework: dropout on each sublayer's output before the
  /// residual add, in the training loss only.
  DropoutSites *dropout = nullptr;
  Tensor drop(Tensor x) { return dropout ? (*dropout)(x) : x; }

  /// src (B, S) -> Z (B, S, D). No final encoder norm.
  Tensor encode(Tensor src) {
    auto scope = g.scope("encoder");
    Tensor r = embed(src); // (B, S, D)
    Tensor n = norm(r);
    r = r + drop(attention("encoder.mha", n, n, /*causal=*/false)); // (B, S, D)
    return r + drop(feedForward("encoder.ff", norm(r)));             // (B, S, D)
  }

  /// tgt_in (B, T) starting with Start, z (B, S, D) -> logits (B, T, V).
  Tensor decode(Tensor tgtIn, Tensor z) {
    Tensor r;
    {
      auto scope = g.scope("decoder");
      r = embed(tgtIn); // (B, T, D)
      Tensor n = norm(r);
      r = r + drop(attention("decoder.mha", n, n, /*causal=*/true)); // (B, T, D)
      r = r + drop(attention("decoder.mhca", norm(r), z, false));    // (B, T, D)
      r = r + drop(feedForward("decoder.ff", norm(r)));               // (B, T, D)
    }
    auto scope = g.scope("output");
    Tensor w = param("output.w", {c.dModel, c.vocab});
    Tensor b = param("output.b", {c.vocab}, "zeros");
    return linear(norm(r), w, b);                                // (B, T, V)
  }

private:
  Tensor param(const std::string &name, llvm::ArrayRef<int64_t> shape,
               const std::string &init = normalInit(kInitStd)) {
    return g.param(name, shape, DType::F32, init);
  }

  /// Parameter-free RMS norm over D.
  Tensor norm(Tensor x) { return rmsNorm(x, {}, kNormEps); }

  /// tokens (B, T) -> fixed embeddings + sinusoidal positions (B, T, D).
  Tensor embed(Tensor tokens) {
    auto scope = g.scope("embed");
    Tensor table = g.param("embed.table", {c.vocab, c.dModel}, DType::F32,
                           "orthogonal(1.0)", /*frozen=*/true);
    Tensor pe = sinusoidalPositions(g, tokens.dim(1), c.dModel); // (T, D)
    return embedding(table, tokens) + pe;                        // (B, T, D)
  }

  /// x (B, Tq, D) queries, ctx (B, Tk, D) keys/values -> (B, Tq, D).
  /// Head h owns features [h*P, (h+1)*P) and projects them with its own
  /// P x P matrices: Q[b,h] = x[b,:,h] @ wq[h].
  Tensor attention(const std::string &name, Tensor x, Tensor ctx,
                   bool causal) {
    auto scope = g.scope(name.substr(name.find('.') + 1));
    const int64_t H = c.nHead, P = c.partSize();
    Tensor wq = param(name + ".wq", {H, P, P});
    Tensor wk = param(name + ".wk", {H, P, P});
    Tensor wv = param(name + ".wv", {H, P, P});
    Tensor wo = param(name + ".wo", {c.dModel, c.dModel});
    Tensor xh = splitHeads(x, H);   // (B, H, Tq, P)
    Tensor ch = splitHeads(ctx, H); // (B, H, Tk, P)
    Tensor q = matmul(xh, wq);      // (B, H, Tq, P) @ (H, P, P)
    Tensor k = matmul(ch, wk);      // (B, H, Tk, P)
    Tensor v = matmul(ch, wv);      // (B, H, Tk, P)
    AttentionOptions options;       // scale 1/sqrt(P)
    options.causal = causal;
    Tensor o = frontend::attention(q, k, v, options); // (B, H, Tq, P)
    return linear(mergeHeads(o), wo);                 // (B, Tq, D)
  }

  /// leaky(x @ w1 + b1) @ w2 + b2: (B, T, D) -> (B, T, D)
  Tensor feedForward(const std::string &name, Tensor x) {
    auto scope = g.scope("ff");
    Tensor w1 = param(name + ".w1", {c.dModel, c.ffDim});
    Tensor b1 = param(name + ".b1", {c.ffDim}, "zeros");
    Tensor w2 = param(name + ".w2", {c.ffDim, c.dModel});
    Tensor b2 = param(name + ".b2", {c.dModel}, "zeros");
    Tensor h = leakyRelu(linear(x, w1, b1), kLeakySlope); // (B, T, F)
    return linear(h, w2, b2);                             // (B, T, D)
  }

  Graph &g;
  EncDecConfig c;
};

void validate(const ModelConfig &cfg) {
  int64_t d = cfg.size("d_model"), h = cfg.size("n_head");
  double dropout = cfg.number("dropout");
  cfg.require(dropout >= 0.0 && dropout < 1.0,
              "dropout (" + llvm::Twine(std::to_string(dropout)) + ") must be in [0, 1)");
  cfg.require(d % h == 0, "d_model (" + llvm::Twine(d) +
                              ") must be divisible by n_head (" +
                              llvm::Twine(h) + ")");
  cfg.require(d % 2 == 0, "d_model (" + llvm::Twine(d) +
                              ") must be even for sinusoidal positions");
  // The position tables are constants in the IR: keep them to 16M values.
  int64_t longest = std::max(cfg.size("src_len"), cfg.size("tgt_len"));
  cfg.require(longest <= (int64_t(1) << 24) / d,
              "src_len/tgt_len (" + llvm::Twine(longest) + ") x d_model (" +
                  llvm::Twine(d) +
                  ") is too large for the sinusoidal position table");
}

void build(Graph &g, const ModelConfig &cfg) {
  EncDecConfig config{cfg.size("d_model"), cfg.size("n_head"),
                      cfg.size("d_model") * cfg.size("ff_mult"),
                      cfg.size("vocab_size")};
  const int64_t B = cfg.size("batch"), S = cfg.size("src_len"),
                T = cfg.size("tgt_len");
  EncDec model(g, config);
  using Outputs = std::vector<EntryOutput>;

  g.entry("forward",
          {{"src", {B, S}, DType::I32}, {"tgt_in", {B, T}, DType::I32}},
          [&](llvm::ArrayRef<Tensor> in) {
            Tensor z = model.encode(in[0]);                    // (B, S, D)
            return Outputs{{"logits", model.decode(in[1], z)}}; // (B, T, V)
          });

  std::vector<EntryInput> lossInputs = {{"src", {B, S}, DType::I32},
                                        {"tgt_in", {B, T}, DType::I32},
                                        {"targets", {B, T}, DType::I32}};
  auto loss = [&](llvm::ArrayRef<Tensor> in) {
    Tensor logits = model.decode(in[1], model.encode(in[0]));
    auto scope = g.scope("loss");
    // mean over targets != -100, () f32
    return crossEntropy(logits, in[2], -100);
  };
  g.entry("loss", lossInputs, [&](llvm::ArrayRef<Tensor> in) {
    return Outputs{{"loss", loss(in)}};
  });
  DropoutSites dropout(cfg.number("dropout"));
  model.dropout = &dropout;
  addTrainingLoss(g, &dropout, lossInputs, loss);
}

} // namespace

ModelInfo encdecModel() {
  using K = ModelOption::Kind;
  ModelInfo info;
  info.name = "encdec";
  info.summary = "the seed article's NumPy encoder-decoder "
                 "(docs/models/encdec.md)";
  info.options = {
      {"batch", K::Size, "64", "batch size B"},
      {"d_model", K::Size, "32", "model width D"},
      {"n_head", K::Size, "4", "heads H; each owns P = D/H features"},
      {"ff_mult", K::Size, "4", "feed-forward width F = ff_mult * D"},
      {"vocab_size", K::Size, "12",
       "vocabulary V (digits 0-9, Start = 10, Finish = 11)"},
      {"src_len", K::Size, "16", "encoder tokens S"},
      {"tgt_len", K::Size, "17",
       "decoder tokens T: Start + 16 targets in the article"},
      {"dropout", K::Number, "0",
       "dropout rate on sublayer outputs in training (0 = off; the "
       "article's homework); adds loss_train"},
  };
  info.validate = validate;
  info.build = build;
  return info;
}

} // namespace tfc::frontend
