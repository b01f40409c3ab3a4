//===- Common.cpp - pieces the models share -------------------------------===//
#include "compiler/frontend/models/Common.h"

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

  // The caches are (B, Hkv, nCtx, D); this chunk fills [pos, pos + T).
  std::string prefix = "kv." + std::to_string(layer);
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

void addCausalLMEntries(Graph &g, CausalLM &model, const CausalLMSizes &s) {
  const int64_t B = s.batch, T = s.seq, P = s.prefillLen, C = s.width,
                V = s.vocab;
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
            Tensor last;
            {
              auto scope = g.scope("last_token");
              last = dynamicSlice(h, in[2] - 1, /*dim=*/1, 1); // (G, 1, C)
              last = reshape(last, {G, C});                    // (G, C)
            }
            return Outputs{{"logits", model.logits(last)}}; // (G, V)
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
    // Decodes one token per row, row b at its own position pos[b]. A row
    // that is not generating may pass any position < n_ctx: its cache slot
    // there is rewritten before any query of that row reads it.
    // decode_rows_R (R = 1, 2, 4, ... < G) decodes the first R rows only, so
    // that a few running sequences cost what they need, not G rows' work.
    auto decodeRows = [&](const std::string &name, int64_t R) {
      g.entry(name, {{"token", {R, 1}, DType::I32}, {"pos", {R}, DType::I32}},
              [&](llvm::ArrayRef<Tensor> in) {
                KVCacheStep cache{in[1], s.nCtx, std::nullopt, G};
                Tensor h = model.hidden(in[0], &cache); // (R, 1, C)
                h = reshape(h, {R, C});                 // (R, C)
                return Outputs{{"logits", model.logits(h)}}; // (R, V)
              });
    };
    decodeRows("decode_rows", G);
    for (int64_t R = 1; R < G; R *= 2)
      decodeRows("decode_rows_" + std::to_string(R), R);
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
              Tensor last;
              {
                auto scope = g.scope("last_token");
                last = dynamicSlice(h, in[3] - 1, /*dim=*/1, 1); // (1, 1, C)
                last = reshape(last, {1, C});                    // (1, C)
              }
              return Outputs{{"logits", model.logits(last)}}; // (1, V)
            });
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
