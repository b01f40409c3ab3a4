// Token generation with a compiled decoder-only model (gpt2, llama: entries prefill, decode
// and sample), the loop that `tfc-run generate` and the Python bindings run:
//
//   TFC_ASSIGN_OR_RETURN(tfc::Generator generator, tfc::Generator::create(context));
//   generator.setTokenizer(tokenizer);  // optional: text prompts, decoded bytes, eos
//   tfc::GenerationOptions options;
//   options.maxNewTokens = 32;
//   TFC_ASSIGN_OR_RETURN(tfc::GenerationStats stats,
//       generator.generate(prompt, options, [](int32_t id, std::string_view bytes) {
//         std::fwrite(bytes.data(), 1, bytes.size(), stdout);
//         return true;  // false stops generation
//       }));
//
// What one generate() call does:
//   1. Prefill: the prompt runs through prefill in chunks of the entry's length P at
//      positions 0, P, 2P, ... (the last chunk padded with 0s, n = the tokens left). A chunk
//      must fit the cache (pos + P <= n_ctx): a last chunk that would not starts earlier, at
//      n_ctx - P, recomputing K/V already in the cache (the same values). With P > n_ctx the
//      prompt goes through decode one token at a time.
//   2. Step i = 0, 1, ...: the model's sample entry draws a token from the latest logits with
//      seed S + i (so a seed gives the same tokens at any thread count, and every earlier
//      release's outputs stay as they were); the token is streamed; then, unless a stop
//      condition holds, decode writes it at the next position.
//   3. Stops after maxNewTokens tokens, at the model's context (n_ctx), at the tokenizer's
//      end-of-text token (streamed, with no bytes), at one of stopTokens (streamed), or when
//      the callback returns false.
// With a model compiled for a batch B > 1 every row runs the same prompt and row 0 is
// reported. Each generate() starts at position 0: the KV cache (the context's state) is
// overwritten, so earlier calls do not leak into later ones.
//
// Thread-safety: a Generator uses its Context, so one thread at a time.
#ifndef TFC_RUNTIME_GENERATOR_HPP_
#define TFC_RUNTIME_GENERATOR_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tfc/runtime/bound_entry.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"
#include "tfc/runtime/tokenizer.hpp"

namespace tfc {

// How tokens are drawn (the model's sample entry's inputs).
struct SamplingOptions {
  double temperature = 0.0;  // 0: greedy (argmax); > 0: sample from softmax(logits / T)
  int32_t topK = 0;          // 0: no top-k filter
  double topP = 1.0;         // 1: no top-p filter; in (0, 1]
  int64_t seed = 0;          // step i samples with seed + i
};

struct GenerationOptions {
  int64_t maxNewTokens = 16;  // >= 1
  SamplingOptions sampling;
  // Generation also stops after any of these ids (the id is streamed).
  std::vector<int32_t> stopTokens;
  // Stop at the tokenizer's end-of-text token, if a tokenizer with one is set.
  bool stopAtEndOfText = true;
};

enum class StopReason {
  kMaxNewTokens,  // maxNewTokens were generated
  kContextLimit,  // the next token would not fit the model's context (n_ctx)
  kEndOfText,     // the tokenizer's end-of-text token came
  kStopToken,     // one of GenerationOptions::stopTokens came
  kCallback,      // the token callback returned false
};

// A short description for logs: "reached the maximum of new tokens", "end of text", ...
const char* stopReasonName(StopReason reason);

struct GenerationStats {
  int64_t promptTokens = 0;
  int64_t generatedTokens = 0;  // streamed tokens, the one that stopped generation included
  int64_t prefillCalls = 0;     // 0 when the prompt went through decode (P > n_ctx)
  int64_t decodeCalls = 0;      // decode calls for generated tokens (not for the prompt)
  int64_t sampleCalls = 0;
  double prefillMs = 0, decodeMs = 0, sampleMs = 0, totalMs = 0;  // wall clock
  StopReason stopReason = StopReason::kMaxNewTokens;
  int32_t lastToken = -1;

  double prefillTokensPerSecond() const;
  double decodeTokensPerSecond() const;
};

// The checks generate() makes: a prompt that is not empty, of ids in [0, vocab), at most
// n_ctx tokens; options in range (INVALID_ARGUMENT with the reason).
Status checkPrompt(const std::vector<int32_t>& prompt, int64_t vocab, int64_t nCtx);
Status checkGenerationOptions(const GenerationOptions& options);

// Called with each generated token: its id and, when a tokenizer is set, its bytes (empty
// for the end-of-text token and without a tokenizer). Return false to stop.
using TokenCallback = std::function<bool(int32_t id, std::string_view bytes)>;

class Generator {
 public:
  Generator() = default;

  // Binds |context|'s prefill, decode and sample entries, checking their signatures
  // (prefill(tokens i32[B, P], pos i32, n i32) -> logits f32[B, V], decode(token i32[B, 1],
  // pos i32) -> logits f32[B, V], sample(logits f32[B, V], temperature f32, top_k i32,
  // top_p f32, seed i64) -> ids i32[B]) and reading n_ctx from the model's metadata.
  // FAILED_PRECONDITION naming what is missing when the model cannot generate.
  static StatusOr<Generator> create(const Context& context);

  // Texts are encoded with, and tokens decoded by, |tokenizer| (may be null: ids only).
  void setTokenizer(std::shared_ptr<const Tokenizer> tokenizer) {
    tokenizer_ = std::move(tokenizer);
  }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }

  int64_t batch() const { return batch_; }
  int64_t prefillChunk() const { return chunk_; }
  int64_t vocabSize() const { return vocab_; }
  int64_t contextLength() const { return nCtx_; }
  const std::string& modelName() const { return modelName_; }

  // Checks |prompt|: not empty, ids in the vocabulary, at most n_ctx tokens
  // (INVALID_ARGUMENT with the reason). generate() calls it first.
  Status check(const std::vector<int32_t>& prompt) const;

  // Generates a continuation of |prompt|, streaming each token to |onToken| (may be empty).
  StatusOr<GenerationStats> generate(const std::vector<int32_t>& prompt,
                                     const GenerationOptions& options,
                                     const TokenCallback& onToken);
  // The same with a text prompt, encoded by the tokenizer's encodePrompt (its BOS token
  // first, when it has one) (FAILED_PRECONDITION without a tokenizer).
  StatusOr<GenerationStats> generateText(std::string_view prompt, const GenerationOptions& options,
                                         const TokenCallback& onToken);

 private:
  Status prefillPrompt(const std::vector<int32_t>& prompt, GenerationStats* stats);

  Context context_;
  BoundEntry prefill_, decode_, sample_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  int64_t batch_ = 0, chunk_ = 0, vocab_ = 0, nCtx_ = 0;
  std::string modelName_;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_GENERATOR_HPP_
