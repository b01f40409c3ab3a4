// Continuous batching: many generation requests at once on one compiled model, each row of
// the model's generation batch an independent sequence (the loop a server runs):
//
//   TFC_ASSIGN_OR_RETURN(tfc::BatchedGenerator batch, tfc::BatchedGenerator::create(context));
//   for (const std::vector<int32_t>& prompt : prompts) {
//     TFC_ASSIGN_OR_RETURN(int64_t id, batch.submit(prompt, options,
//         [](int32_t token, std::string_view bytes) { return true; },  // streamed tokens
//         [](const tfc::RequestResult& done) { ... }));                 // once, at the end
//   }
//   TFC_RETURN_IF_ERROR(batch.runUntilIdle());
//
// The model must be compiled for a generation batch G > 1 (tfc-trace --set gen_batch=G),
// which gives it the entries decode_rows (one token per row, each row at its own position)
// and prefill_row (a chunk of one sequence's prompt into one row of the KV cache).
//
// What one step() does:
//   1. Admits queued requests, oldest first, into free rows.
//   2. Prefill: up to K chunks of P tokens (setPrefillChunksPerStep, default 2) through
//      prefill_row, for the requests still reading their prompts, oldest first (the
//      oldest reads on until its prompt is done, then the next), as Generator does for
//      one prompt (a last chunk that would pass n_ctx starts earlier). A request whose
//      prompt is done samples its first token. The budget bounds the pause the running
//      requests see between two tokens (K chunks and a decode).
//   3. Decode: one decode_rows call writes the latest token of every generating row at its
//      own position and samples the next. Rows that are free or still prefilling take part
//      with positions whose slots are rewritten before they are read. Requests take the
//      lowest free rows, and a step calls the smallest of decode_rows_1, _2, _4, ... (when
//      the model has them) that covers the highest generating row: one running request
//      costs one row's work.
// So a long prompt is read chunk by chunk between decode steps of the others (chunked
// prefill), and a finished request frees its row for the next one at once.
//
// A model traced with a paged KV cache (--set kv_block=S kv_blocks=N: its decode_rows and
// prefill_row take a block table per row) keeps every request's keys and values in blocks
// of a shared pool instead of a row of n_ctx positions:
//   - admission also needs the pool to hold the request's prompt (oldest first);
//   - the whole blocks of a prompt are published once it is read, and a later prompt that
//     starts with the same tokens reuses them (prefix caching; a block nobody holds keeps
//     its prefix until the pool needs it, least recently used first);
//   - decoding takes a block every S tokens; when none is free, the youngest running
//     request goes back to the head of the queue, its blocks freed, and is prefilled again
//     (its prompt and generated tokens) when readmitted: it streams no token twice and
//     gets the same tokens.
//
// Tokens are drawn as Generator draws them: step i of a request samples with its seed + i
// from its own logits alone (greedy: argmax). A request gets the same tokens whichever row
// it runs in and whatever runs beside it, and the same as Generator::generate on the model.
//
// Threads: submit(), cancel(), queued(), running() and idle() may be called from any
// thread; step() and runUntilIdle() from one thread at a time, which is where the callbacks
// run.
#ifndef TFC_RUNTIME_BATCHED_GENERATOR_HPP_
#define TFC_RUNTIME_BATCHED_GENERATOR_HPP_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tfc/runtime/bound_entry.hpp"
#include "tfc/runtime/generator.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"
#include "tfc/runtime/tokenizer.hpp"

namespace tfc {

// How one request went. Times are wall clock from its submit().
struct RequestResult {
  int64_t id = 0;
  int64_t row = -1;              // the row it ran in (-1: it never ran)
  int64_t promptTokens = 0;
  int64_t generatedTokens = 0;   // streamed tokens, the one that stopped generation included
  StopReason stopReason = StopReason::kMaxNewTokens;
  bool cancelled = false;        // by cancel() (stopReason is then kCallback)
  std::string error;             // why the model failed, ending it (stopReason kCallback)
  double queuedMs = 0;           // until it got a row
  double firstTokenMs = 0;       // until its first token (time to first token)
  double totalMs = 0;            // until its last token
  std::vector<int32_t> tokens;   // the generated ids
};

using RequestDone = std::function<void(const RequestResult& result)>;

class BatchedGenerator {
 public:
  // Binds |context|'s decode_rows, prefill_row and sample entries, checking their signatures
  // (decode_rows(token i32[G, 1], pos i32[G]) -> logits f32[G, V], prefill_row(tokens
  // i32[1, P], row i32, pos i32, n i32) -> logits f32[1, V], sample as Generator's; with a
  // paged cache, blocks i32[G, M] and blocks i32[1, M] instead of row).
  // FAILED_PRECONDITION naming what is missing (a model compiled for G = 1, or before them).
  static StatusOr<BatchedGenerator> create(const Context& context);

  BatchedGenerator(BatchedGenerator&&) noexcept;
  BatchedGenerator& operator=(BatchedGenerator&&) noexcept;
  ~BatchedGenerator();

  // Tokens are decoded by |tokenizer| for the callbacks (may be null: ids only); its
  // end-of-text token stops a request (GenerationOptions::stopAtEndOfText).
  void setTokenizer(std::shared_ptr<const Tokenizer> tokenizer);

  int64_t rows() const;          // G: requests that run at once
  int64_t prefillChunk() const;  // P
  int64_t vocabSize() const;
  int64_t contextLength() const;  // n_ctx

  // Queues a request and returns its id (1, 2, ...). INVALID_ARGUMENT for a prompt or
  // options that generate() would refuse. |onToken| gets each token as it comes (false
  // stops the request); |onDone| is called once, when the request ends.
  StatusOr<int64_t> submit(std::vector<int32_t> prompt, const GenerationOptions& options,
                           TokenCallback onToken, RequestDone onDone);

  // Ends request |id| at the next step (queued: without running); onDone is still called,
  // with cancelled set. False if no such request is queued or running.
  bool cancel(int64_t id);

  // Requests waiting for a row, and those in rows.
  int64_t queued() const;
  int64_t running() const;
  bool idle() const { return queued() == 0 && running() == 0; }

  // One step (see above). An error (a failed call into the model) ends every running
  // request; the generator stays usable.
  Status step();
  // Steps until nothing is queued or running.
  Status runUntilIdle();

  // Prefill chunks a step runs at most (default 2; >= 1): more shortens a burst's time to
  // first token and lengthens the running requests' pauses between tokens (gpt2-124m at 16
  // concurrent requests, 2 threads: 1 -> 2 chunks took p99 time to first token from 8.1 to
  // 5.7 s and p99 inter-token from 0.22 to 0.30 s; docs/performance.md).
  void setPrefillChunksPerStep(int64_t chunks);

  // Counters since create().
  struct Counters {
    int64_t steps = 0, prefillCalls = 0, decodeCalls = 0, sampleCalls = 0;
    int64_t decodedTokens = 0;  // summed over rows
    double prefillMs = 0, decodeMs = 0, sampleMs = 0;
    // A paged KV cache: prompt tokens whose cached blocks were reused instead of computed,
    // and requests sent back to the queue when the pool ran out of blocks.
    int64_t prefixReusedTokens = 0, preemptions = 0;
  };
  Counters counters() const;

  // A paged KV cache (a model traced with kv_block > 0): its blocks, those held by running
  // requests, and those no request holds that keep a prompt prefix for reuse. All 0 for an
  // unpaged cache. Step()'s thread only.
  struct KvBlocks {
    int64_t total = 0, used = 0, cached = 0, blockSize = 0;
  };
  KvBlocks kvBlocks() const;

 private:
  struct State;
  explicit BatchedGenerator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tfc

#endif  // TFC_RUNTIME_BATCHED_GENERATOR_HPP_
