//===- Common.h - pieces the models share ------------------------*- C++ -*-===//
//
// Head splitting, KV-cached causal self-attention and the entry points every
// decoder-only language model has (forward, loss, prefill, decode, sample).
// Only what is truly the same across models lives here; each model file
// reads top to bottom on its own.
//
//===----------------------------------------------------------------------===//
#ifndef TFC_COMPILER_FRONTEND_MODELS_COMMON_H
#define TFC_COMPILER_FRONTEND_MODELS_COMMON_H

#include "compiler/frontend/Graph.h"
#include "compiler/frontend/Ops.h"

#include <optional>
#include <string>

namespace tfc::frontend {

/// "normal(0.0, <std>)", as tfc.param's init grammar spells it.
std::string normalInit(double std);

/// (B, T, H*D) -> (B, H, T, D): head h owns features [h*D, (h+1)*D).
Tensor splitHeads(Tensor x, int64_t heads);
/// (B, H, T, D) -> (B, T, H*D): the inverse of splitHeads.
Tensor mergeHeads(Tensor x);
/// x[..., begin:end] along the last dimension.
Tensor sliceLastDim(Tensor x, int64_t begin, int64_t end);

/// A step of incremental decoding: the chunk's tokens start at cache position
/// `pos`, and every layer keeps its keys and values in module state
/// `kv.{layer}.k` / `kv.{layer}.v` of shape (G, Hkv, nCtx, D). `pos` is a 0-d
/// i32 (every row at the same position) or a 1-d [B] (each row of the batch
/// its own sequence at its own position: serving; the B rows are the first B
/// of the cache's G when `rows` says G). With `row` (a 0-d i32) the chunk is a
/// batch of one written into that row of a G-row cache, the other rows
/// untouched (a new request's prompt while others decode).
///
/// With `blocks` (a [B, M] i32 block table) the cache is paged: each layer's
/// state is a pool of `poolBlocks` blocks (poolBlocks, Hkv, S, D) with S =
/// nCtx / M, row b's position p in block blocks[b, p / S]; `pos` is [B].
struct KVCacheStep {
  Tensor pos;
  int64_t nCtx;
  std::optional<Tensor> row = {};
  int64_t rows = 0; ///< the cache's rows G when the batch has fewer
  std::optional<Tensor> blocks = {};
  int64_t poolBlocks = 0;
};

/// Causal self-attention of layer `layer`: q (B, H, T, D), k and v
/// (B, Hkv, T, D) -> (B, H, T, D). Without `cache` the T tokens attend to
/// each other. With it, k and v are written into the layer's cache at
/// [pos, pos + T) and the queries attend over the whole cache with
/// `offset = pos`: query i sees cache slots 0 .. pos + i and nothing later.
Tensor causalSelfAttention(Graph &g, int64_t layer, Tensor q, Tensor k,
                           Tensor v, const KVCacheStep *cache);

/// The model-specific half of a decoder-only language model.
/// Dropout at the sites a model marks, active only while the training loss
/// (`loss_train`) is traced. Site i draws its mask from the stream
/// seed + i * 2^32 (the counter is the element index inside the op), so the
/// masks of different sites are independent, and the same seed reproduces
/// them on any number of threads.
class DropoutSites {
public:
  explicit DropoutSites(double rate) : rate_(rate) {}
  bool enabled() const { return rate_ > 0.0; }
  /// x, or dropout(x) while a seed is set.
  Tensor operator()(Tensor x);
  void start(Tensor seed) {
    seed_ = seed;
    next_ = 0;
  }
  void stop() { seed_ = Tensor(); }

private:
  double rate_;
  Tensor seed_;
  int64_t next_ = 0;
};

class CausalLM {
public:
  virtual ~CausalLM() = default;
  /// Set by the model when it has dropout sites (nullptr: none).
  DropoutSites *dropout = nullptr;
  /// tokens (B, T) i32 -> hidden states (B, T, C) before the final norm.
  /// With `cache`, positions start at cache->pos and attention goes through
  /// the KV cache (causalSelfAttention).
  virtual Tensor hidden(Tensor tokens, const KVCacheStep *cache) = 0;
  /// h (..., C) -> logits (..., V): the final norm and the LM head.
  virtual Tensor logits(Tensor h) = 0;
  /// A term the training loss adds to the cross-entropy, computed from the
  /// last hidden() (Mixtral: the weighted load-balancing loss), or none.
  virtual std::optional<Tensor> auxiliaryLoss() { return std::nullopt; }
  /// Whether the model routes tokens to experts; then routerLoss() is the
  /// unweighted load-balancing loss of the last hidden() (served as the
  /// `router_aux_loss` entry).
  virtual bool hasRouter() const { return false; }
  virtual Tensor routerLoss() { return Tensor(); }
};

/// Sizes of the entry points of a decoder-only LM.
struct CausalLMSizes {
  int64_t batch;      ///< B of forward and loss (the training batch)
  int64_t genBatch;   ///< B of prefill, decode and sample (and the KV cache)
  int64_t seq;        ///< T of forward and loss
  int64_t prefillLen; ///< P of prefill
  int64_t nCtx;       ///< KV cache length
  int64_t width;      ///< C, the hidden width
  int64_t vocab;      ///< V
  int64_t kvBlock = 0;  ///< positions per KV-cache block; 0: unpaged
  int64_t kvBlocks = 0; ///< blocks in the paged pool (0: genBatch * nCtx / kvBlock)
};

struct ModelOption;
class ModelConfig;
/// kv_block and kv_blocks, the paged KV cache's options, as every causal LM
/// offers them; readPagedCache checks them and fills `sizes`.
void addPagedCacheOptions(std::vector<ModelOption> &options);
void readPagedCache(const ModelConfig &cfg, CausalLMSizes &sizes);

/// With dropout sites enabled, adds
///   loss_train(<inputs>..., dropout_seed () i64) -> loss () f32
/// tracing `loss` with dropout on; tfc-autodiff differentiates it instead of
/// `loss` (which stays dropout-free for evaluation).
void addTrainingLoss(Graph &g, DropoutSites *dropout,
                     std::vector<EntryInput> inputs,
                     std::function<Tensor(llvm::ArrayRef<Tensor>)> loss);

/// Adds the entry functions of a decoder-only LM to `g`:
///   forward(tokens (B,T) i32) -> logits (B,T,V)
///   loss(tokens (B,T) i32, targets (B,T) i32) -> loss () f32
///     (the cross-entropy plus the model's auxiliaryLoss())
///   router_aux_loss(tokens (B,T) i32) -> aux_loss () f32
///     (only for models with a router)
///   prefill(tokens (B,P) i32, pos () i32, n () i32) -> logits (B,V)
///   decode(token (B,1) i32, pos () i32) -> logits (B,V)
///   sample(logits (B,V) f32, temperature () f32, top_k () i32,
///          top_p () f32, seed () i64) -> ids (B) i32
void addCausalLMEntries(Graph &g, CausalLM &model, const CausalLMSizes &sizes);

} // namespace tfc::frontend

#endif // TFC_COMPILER_FRONTEND_MODELS_COMMON_H
