//===- Common.cpp - pieces the models share -------------------------------===//
#include "compiler/frontend/models/Common.h"
#include "compiler/frontend/models/Model.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace tfc::frontend {

std::string normalInit(double std) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "normal(0.0, " << llvm::format("%.9g", std) << ")";
  return s;
}

Tensor splitHeads(Tensor x, int64_t heads) {
  int64_t B = x.dim(0), T = x.dim(1), C = x.dim(2);
  if (C % heads != 0)
    throw TraceError("splitHeads: width " + std::to_string(C) +
                     " is not divisible by " + std::to_string(heads) +
                     " heads");
  Tensor h = reshape(x, {B, T, heads, C / heads}); // (B, T, H, D)
  return transpose(h, {0, 2, 1, 3});               // (B, H, T, D)
}

Tensor mergeHeads(Tensor x) {
  int64_t B = x.dim(0), H = x.dim(1), T = x.dim(2), D = x.dim(3);
  Tensor t = transpose(x, {0, 2, 1, 3}); // (B, T, H, D)
  return reshape(t, {B, T, H * D});      // (B, T, H*D)
}

Tensor sliceLastDim(Tensor x, int64_t begin, int64_t end) {
  Shape start(x.rank(), 0);
  Shape limit(x.shape());
  start.back() = begin;
  limit.back() = end;
  return slice(x, start, limit);
}

Tensor causalSelfAttention(Graph &g, int64_t layer, Tensor q, Tensor k,
                           Tensor v, const KVCacheStep *cache) {
  AttentionOptions options;
  options.causal = true;
  if (!cache)
    return attention(q, k, v, options); // (B, H, T, D)

  std::string prefix = "kv." + std::to_string(layer);
  if (cache->blocks) {
    // Paged: pools of blocks, written and read through the rows' tables.
    int64_t S = cache->nCtx / cache->blocks->dim(1);
    auto pool = [&](const std::string &name, Tensor fresh) {
      Tensor stored = g.state(name, {cache->poolBlocks, fresh.dim(1), S,
                                     fresh.dim(3)},
                              fresh.dtype(), "zeros");
      Tensor updated = pagedKvWrite(stored, fresh, *cache->blocks, cache->pos);
      g.store(name, updated);
      return updated;
    };
    Tensor keys = pool(prefix + ".k", k);
    Tensor values = pool(prefix + ".v", v);
    return pagedAttention(q, keys, values, *cache->blocks, cache->pos);
  }
  // The caches are (B, Hkv, nCtx, D); this chunk fills [pos, pos + T).
  auto update = [&](const std::string &name, Tensor fresh) {
    Shape shape = {cache->rows ? cache->rows : fresh.dim(0), fresh.dim(1),
                   cache->nCtx, fresh.dim(3)};
    Tensor stored = g.state(name, shape, fresh.dtype(), "zeros");
    if (cache->row) {
      // The row's cache, updated, then written back into its row.
      Tensor mine = dynamicSlice(stored, *cache->row, /*dim=*/0, 1);
      Tensor updated = kvCacheUpdate(mine, fresh, cache->pos, /*dim=*/2);
      g.store(name, kvCacheUpdate(stored, updated, *cache->row, /*dim=*/0));
      return updated;
    }
    Tensor updated = kvCacheUpdate(stored, fresh, cache->pos, /*dim=*/2);
    g.store(name, updated);
    return updated;
  };
  Tensor keys = update(prefix + ".k", k);   // (B, Hkv, nCtx, D)
  Tensor values = update(prefix + ".v", v); // (B, Hkv, nCtx, D)
  options.offset = cache->pos;
  return attention(q, keys, values, options); // (B, H, T, D)
}

Tensor DropoutSites::operator()(Tensor x) {
  if (!seed_ || !enabled())
    return x;
  // A distinct stream per site: seed + i * 2^32.
  Tensor siteSeed = seed_ + static_cast<double>(next_++ * (int64_t(1) << 32));
  return frontend::dropout(x, siteSeed, static_cast<float>(rate_));
}

void addTrainingLoss(Graph &g, DropoutSites *dropout,
                     std::vector<EntryInput> inputs,
                     std::function<Tensor(llvm::ArrayRef<Tensor>)> loss) {
  if (!dropout || !dropout->enabled())
    return;
  inputs.push_back({"dropout_seed", {}, DType::I64});
  g.entry("loss_train", inputs, [&](llvm::ArrayRef<Tensor> in) {
    dropout->start(in.back());
    Tensor value = loss(in.drop_back());
    dropout->stop();
    return std::vector<EntryOutput>{{"loss", value}};
  });
}

namespace {
using Outputs = std::vector<EntryOutput>;

/// The last token's logits of a prefill chunk h (B, P, C): token n - 1.
Tensor lastTokenLogits(Graph &g, CausalLM &model, Tensor h, Tensor n) {
  int64_t B = h.dim(0), C = h.dim(2);
  Tensor last;
  {
    auto scope = g.scope("last_token");
    last = dynamicSlice(h, n - 1, /*dim=*/1, 1); // (B, 1, C)
    last = reshape(last, {B, C});                // (B, C)
  }
  return model.logits(last); // (B, V)
}

/// decode_rows (G rows) and decode_rows_R (the first R = 1, 2, 4, ... < G
/// rows): one token per row, row b its own sequence at position pos[b], so
/// that a few running sequences cost what they need, not G rows' work. With
/// a paged cache (tableBlocks M > 0) each row also takes its block table.
void addDecodeRows(Graph &g, CausalLM &model, const CausalLMSizes &s,
                   int64_t tableBlocks = 0, int64_t poolBlocks = 0) {
  const int64_t C = s.width, G = s.genBatch;
  auto decodeRows = [&](const std::string &name, int64_t R) {
    std::vector<EntryInput> inputs = {{"token", {R, 1}, DType::I32},
                                      {"pos", {R}, DType::I32}};
    if (tableBlocks)
      inputs.push_back({"blocks", {R, tableBlocks}, DType::I32});
    g.entry(name, inputs, [&](llvm::ArrayRef<Tensor> in) {
      KVCacheStep cache{in[1], s.nCtx, std::nullopt, G};
      if (tableBlocks) {
        cache.blocks = in[2];
        cache.poolBlocks = poolBlocks;
      }
      Tensor h = model.hidden(in[0], &cache);      // (R, 1, C)
      h = reshape(h, {R, C});                      // (R, C)
      return Outputs{{"logits", model.logits(h)}}; // (R, V)
    });
  };
  decodeRows("decode_rows", G);
  for (int64_t R = 1; R < G; R *= 2)
    decodeRows("decode_rows_" + std::to_string(R), R);
}

/// prefill and decode over a cache of G rows of n_ctx positions, and with
/// G > 1 the serving entries decode_rows(_R) and prefill_row.
void addUnpagedGenerationEntries(Graph &g, CausalLM &model,
                                 const CausalLMSizes &s) {
  const int64_t P = s.prefillLen, C = s.width, G = s.genBatch;
  // Runs a chunk of P tokens from cache position `pos` and returns the
  // logits of its token n-1 (a last, partly filled chunk has n < P; the
  // cache slots it writes past n are overwritten by the next step before
  // any query can see them).
  g.entry("prefill",
          {{"tokens", {G, P}, DType::I32},
           {"pos", {}, DType::I32},
           {"n", {}, DType::I32}},
          [&](llvm::ArrayRef<Tensor> in) {
            KVCacheStep cache{in[1], s.nCtx};
            Tensor h = model.hidden(in[0], &cache); // (G, P, C)
            return Outputs{{"logits", lastTokenLogits(g, model, h, in[2])}};
          });

  g.entry("decode", {{"token", {G, 1}, DType::I32}, {"pos", {}, DType::I32}},
          [&](llvm::ArrayRef<Tensor> in) {
            KVCacheStep cache{in[1], s.nCtx};
            Tensor h = model.hidden(in[0], &cache); // (G, 1, C)
            h = reshape(h, {G, C});                 // (G, C)
            return Outputs{{"logits", model.logits(h)}}; // (G, V)
          });

  // Serving: the rows of the batch are independent sequences (a generation
  // batch G > 1 only; with G = 1, prefill and decode are these).
  if (G > 1) {
    // A row that is not generating may pass any position < n_ctx: its cache
    // slot there is rewritten before any query of that row reads it.
    addDecodeRows(g, model, s);
    // prefill for one sequence: a chunk of P tokens into row `row` of the
    // cache at position `pos`; the other rows keep their caches.
    g.entry("prefill_row",
            {{"tokens", {1, P}, DType::I32},
             {"row", {}, DType::I32},
             {"pos", {}, DType::I32},
             {"n", {}, DType::I32}},
            [&](llvm::ArrayRef<Tensor> in) {
              KVCacheStep cache{in[2], s.nCtx, in[1], G};
              Tensor h = model.hidden(in[0], &cache); // (1, P, C)
              return Outputs{{"logits", lastTokenLogits(g, model, h, in[3])}};
            });
  }
}

/// The serving entries over a paged KV cache (kv_block = S > 0): a pool of
/// blocks shared by all sequences, each row with its block table.
///   decode_rows(token [G, 1], pos [G], blocks [G, M]) -> logits [G, V]
///   decode_rows_R: the same for the first R = 1, 2, 4, ... < G rows
///   prefill_row(tokens [1, P], pos, n, blocks [1, M]) -> logits [1, V]
/// A row that is not generating passes a table of -1 (its writes dropped).
void addPagedServingEntries(Graph &g, CausalLM &model,
                            const CausalLMSizes &s) {
  const int64_t P = s.prefillLen, G = s.genBatch;
  const int64_t M = s.nCtx / s.kvBlock;
  const int64_t poolBlocks = s.kvBlocks ? s.kvBlocks : G * M;
  addDecodeRows(g, model, s, M, poolBlocks);
  g.entry("prefill_row",
          {{"tokens", {1, P}, DType::I32},
           {"pos", {}, DType::I32},
           {"n", {}, DType::I32},
           {"blocks", {1, M}, DType::I32}},
          [&](llvm::ArrayRef<Tensor> in) {
            KVCacheStep cache{reshape(in[1], {1}), s.nCtx};
            cache.blocks = in[3];
            cache.poolBlocks = poolBlocks;
            Tensor h = model.hidden(in[0], &cache); // (1, P, C)
            return Outputs{{"logits", lastTokenLogits(g, model, h, in[2])}};
          });
}
} // namespace

void addPagedCacheOptions(std::vector<ModelOption> &options) {
  using K = ModelOption::Kind;
  options.push_back({"kv_block", K::Size, "0",
                     "positions per KV-cache block; > 0 pages the cache "
                     "(serving: memory follows the tokens in use; must "
                     "divide n_ctx)",
                     {}, /*allowZero=*/true});
  options.push_back({"kv_blocks", K::Size, "0",
                     "blocks in the paged KV cache's pool (0: gen_batch * "
                     "n_ctx / kv_block, every row full)",
                     {}, /*allowZero=*/true});
}

void readPagedCache(const ModelConfig &cfg, CausalLMSizes &sizes) {
  int64_t block = cfg.size("kv_block"), blocks = cfg.size("kv_blocks");
  cfg.require(block == 0 || sizes.nCtx % block == 0,
              "kv_block (" + llvm::Twine(block) + ") must divide n_ctx (" +
                  llvm::Twine(sizes.nCtx) + ")");
  cfg.require(blocks == 0 || block > 0,
              "kv_blocks (" + llvm::Twine(blocks) +
                  ") sizes the paged KV cache: it needs kv_block > 0");
  cfg.require(block == 0 || blocks == 0 || blocks >= sizes.nCtx / block,
              "kv_blocks (" + llvm::Twine(blocks) +
                  ") must hold one whole context: at least n_ctx / kv_block = " +
                  llvm::Twine(block ? sizes.nCtx / block : 0));
  sizes.kvBlock = block;
  sizes.kvBlocks = blocks;
}

void addCausalLMEntries(Graph &g, CausalLM &model, const CausalLMSizes &s) {
  const int64_t B = s.batch, T = s.seq, V = s.vocab;
  // Generation has a batch of its own (default 1): one artifact trains at
  // batch B and serves single prompts without decoding B copies of each.
  const int64_t G = s.genBatch;
  using Outputs = std::vector<EntryOutput>;

  g.entry("forward", {{"tokens", {B, T}, DType::I32}},
          [&](llvm::ArrayRef<Tensor> in) {
            Tensor h = model.hidden(in[0], nullptr); // (B, T, C)
            return Outputs{{"logits", model.logits(h)}}; // (B, T, V)
          });

  std::vector<EntryInput> lossInputs = {{"tokens", {B, T}, DType::I32},
                                        {"targets", {B, T}, DType::I32}};
  auto loss = [&](llvm::ArrayRef<Tensor> in) {
    Tensor logits = model.logits(model.hidden(in[0], nullptr));
    std::optional<Tensor> aux = model.auxiliaryLoss();
    auto scope = g.scope("loss");
    // mean over targets != -100, () f32
    Tensor value = crossEntropy(logits, in[1], /*ignoreIndex=*/-100);
    return aux ? value + *aux : value;
  };
  g.entry("loss", lossInputs, [&](llvm::ArrayRef<Tensor> in) {
    return Outputs{{"loss", loss(in)}};
  });
  addTrainingLoss(g, model.dropout, lossInputs, loss);

  if (model.hasRouter()) {
    g.entry("router_aux_loss", {{"tokens", {B, T}, DType::I32}},
            [&](llvm::ArrayRef<Tensor> in) {
              model.hidden(in[0], nullptr);
              return Outputs{{"aux_loss", model.routerLoss()}};
            });
  }

  if (s.kvBlock > 0) {
    addPagedServingEntries(g, model, s);
  } else {
    addUnpagedGenerationEntries(g, model, s);
  }

  g.entry("sample",
          {{"logits", {G, V}, DType::F32},
           {"temperature", {}, DType::F32},
           {"top_k", {}, DType::I32},
           {"top_p", {}, DType::F32},
           {"seed", {}, DType::I64}},
          [&](llvm::ArrayRef<Tensor> in) {
            Tensor ids = sample(in[0], in[1], in[2], in[3], in[4]); // (G) i32
            return Outputs{{"ids", ids}};
          });
}

} // namespace tfc::frontend
