#include "tfc/runtime/batched_generator.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include "loops/generator_c_api.hpp"
#include "loops/kv_block_pool.hpp"
#include "core/runtime_internal.hpp"
#include "tfc/runtime/metadata.hpp"

namespace tfc {
namespace {

using Clock = std::chrono::steady_clock;

double millisBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

struct Request {
  int64_t id = 0;
  std::vector<int32_t> prompt;
  GenerationOptions options;
  TokenCallback onToken;
  RequestDone onDone;
  Clock::time_point submitted;
  bool cancelled = false;
  // The tokens prefill writes into the cache: the prompt; after a preemption, the prompt and
  // every generated token but the latest (recomputed, then decoding goes on).
  std::vector<int32_t> toPrefill;
  // In a row:
  int64_t prefilled = 0;    // tokens of toPrefill in the cache
  int64_t position = 0;     // where the latest token goes (prompt + generated - 1)
  int32_t latest = -1;      // the latest sampled token, to be decoded
  std::vector<int32_t> blocks;  // a paged cache: the request's block table
  int64_t published = 0;        // its leading blocks offered for prefix reuse
  RequestResult result;

  bool prefilling() const { return prefilled < static_cast<int64_t>(toPrefill.size()); }
};

}  // namespace

struct BatchedGenerator::State {
  Context context;
  BoundEntry prefillRow, sample;
  // decode_rows_R for R = 1, 2, 4, ... < G (when the model has them), then decode_rows (G):
  // a step decodes with the smallest that covers the highest generating row.
  std::vector<std::pair<int64_t, BoundEntry>> decodeRows;
  std::shared_ptr<const Tokenizer> tokenizer;
  int64_t rows = 0, chunk = 0, vocab = 0, nCtx = 0;
  // A paged KV cache (the entries take block tables): its blocks, M per table.
  std::optional<internal::KvBlockPool> pool;
  int64_t tableBlocks = 0;

  mutable std::mutex mutex;  // guards queue, nextId, cancelRequests, runningIds
  std::deque<Request> queue;
  std::vector<int64_t> cancelRequests;
  std::vector<int64_t> runningIds;  // the ids in slots, for cancel() from other threads
  int64_t nextId = 1;

  std::vector<std::optional<Request>> slots;  // one per row (step()'s thread only)
  Counters counters;
  int64_t prefillChunksPerStep = 2;

  // Admits queued requests into free rows; ends cancelled queued ones.
  void admit();
  // Draws a token for |request| from logits row |logits| (V floats).
  StatusOr<int32_t> drawOne(const Request& request, const float* logits);
  // Streams |token| for the request in |row| and decides whether it goes on.
  void deliver(int64_t row, int32_t token, Clock::time_point now);
  void finish(int64_t row, StopReason reason, bool cancelled = false);
  // A paged cache: takes the blocks of a request being admitted (reusing cached prefix
  // blocks); false, taking none, if the pool cannot hold its tokens and still keep
  // |headroom| blocks for the running requests.
  bool takeBlocks(Request& request, int64_t headroom);
  void releaseBlocks(Request& request);
  // Puts the request in |row| back at the head of the queue, its blocks freed: it is
  // prefilled again (its tokens so far) when blocks allow.
  void preempt(size_t row);
  // A paged cache: a block for every generating row's next position, preempting the
  // youngest requests while the pool is short.
  void growTables();
  void fillTable(int32_t* table, const Request* request) const;
  Status prefillStep();
  Status decodeStep();
};

BatchedGenerator::BatchedGenerator(std::unique_ptr<State> state) : state_(std::move(state)) {}
BatchedGenerator::BatchedGenerator(BatchedGenerator&&) noexcept = default;
BatchedGenerator& BatchedGenerator::operator=(BatchedGenerator&&) noexcept = default;
BatchedGenerator::~BatchedGenerator() = default;

StatusOr<BatchedGenerator> BatchedGenerator::create(const Context& context) {
  Artifact artifact = context.artifact();
  auto state = std::make_unique<State>();
  state->context = context;
  for (const char* name : {"decode_rows", "prefill_row"}) {
    if (!artifact.findEntry(name).ok()) {
      return Status::error(
          TFC_FAILED_PRECONDITION,
          "the model has no '%s' entry: batched generation needs a model traced with a "
          "generation batch of 2 or more (tfc-trace ... --set gen_batch=8), by a tfc that "
          "writes the serving entries",
          name);
    }
  }
  // A paged cache's entries take a block table each.
  TFC_ASSIGN_OR_RETURN(int32_t decodeIndex, artifact.findEntry("decode_rows"));
  const bool paged = artifact.entry(decodeIndex).num_inputs == 3;
  std::vector<TensorExpectation> rowInputs = {{"token", TFC_DTYPE_I32, 2},
                                             {"pos", TFC_DTYPE_I32, 1}};
  std::vector<TensorExpectation> prefillInputs = {{"tokens", TFC_DTYPE_I32, 2},
                                                 {"row", TFC_DTYPE_I32, 0},
                                                 {"pos", TFC_DTYPE_I32, 0},
                                                 {"n", TFC_DTYPE_I32, 0}};
  if (paged) {
    rowInputs.push_back({"blocks", TFC_DTYPE_I32, 2});
    prefillInputs.erase(prefillInputs.begin() + 1);
    prefillInputs.push_back({"blocks", TFC_DTYPE_I32, 2});
  }
  TFC_ASSIGN_OR_RETURN(state->prefillRow,
                       BoundEntry::create(artifact, "prefill_row", prefillInputs,
                                          {{"logits", TFC_DTYPE_F32, 2}}, "batched generation"));
  TFC_ASSIGN_OR_RETURN(BoundEntry all,
                       BoundEntry::create(artifact, "decode_rows", rowInputs,
                                          {{"logits", TFC_DTYPE_F32, 2}}, "batched generation"));
  const int64_t allRows = all.output("logits").shape()[0];
  for (int64_t r = 1; r < allRows; r *= 2) {
    const std::string name = "decode_rows_" + std::to_string(r);
    if (!artifact.findEntry(name).ok()) continue;
    TFC_ASSIGN_OR_RETURN(BoundEntry some,
                         BoundEntry::create(artifact, name, rowInputs,
                                            {{"logits", TFC_DTYPE_F32, 2}}, "batched generation"));
    if (some.input("pos").shape() != std::vector<int64_t>{r} ||
        some.output("logits").shape() != std::vector<int64_t>{r, all.output("logits").shape()[1]}) {
      return Status::error(TFC_INVALID_ARGUMENT, "%s does not decode %lld rows: %s", name.c_str(),
                           static_cast<long long>(r), some.signature().c_str());
    }
    state->decodeRows.emplace_back(r, std::move(some));
  }
  state->decodeRows.emplace_back(allRows, std::move(all));
  TFC_ASSIGN_OR_RETURN(state->sample,
                       BoundEntry::create(artifact, "sample",
                                          {{"logits", TFC_DTYPE_F32, 2},
                                           {"temperature", TFC_DTYPE_F32, 0},
                                           {"top_k", TFC_DTYPE_I32, 0},
                                           {"top_p", TFC_DTYPE_F32, 0},
                                           {"seed", TFC_DTYPE_I64, 0}},
                                          {{"ids", TFC_DTYPE_I32, 1}}, "batched generation"));
  const std::vector<int64_t>& tokens = state->prefillRow.input("tokens").shape();
  BoundEntry& decode = state->decodeRows.back().second;
  const std::vector<int64_t>& logits = decode.output("logits").shape();
  const int64_t rows = logits[0], vocab = logits[1];
  if (tokens[0] != 1 || state->prefillRow.output("logits").shape() != std::vector<int64_t>{1, vocab} ||
      decode.input("token").shape() != std::vector<int64_t>{rows, 1} ||
      decode.input("pos").shape() != std::vector<int64_t>{rows} ||
      state->sample.input("logits").shape() != std::vector<int64_t>{rows, vocab} ||
      state->sample.output("ids").shape() != std::vector<int64_t>{rows}) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "the serving entries disagree on the rows or the vocabulary: %s, %s, %s",
                         state->prefillRow.signature().c_str(), decode.signature().c_str(),
                         state->sample.signature().c_str());
  }
  std::string metadata(artifact.metadataJson());
  std::optional<int64_t> nCtx = metadataInt(metadata, "n_ctx");
  if (!nCtx) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "the model's metadata does not give its context length (n_ctx)");
  }
  state->rows = rows;
  state->chunk = tokens[1];
  state->vocab = vocab;
  state->nCtx = *nCtx;
  if (state->chunk > state->nCtx) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "the prefill chunk (%lld tokens) is longer than the context (n_ctx "
                         "%lld): trace with prefill_len <= n_ctx",
                         static_cast<long long>(state->chunk), static_cast<long long>(*nCtx));
  }
  if (paged) {
    // M blocks of S positions per table; the pool is the caches' first dimension
    // (states kv.L.k, kv.L.v: [blocks, Hkv, S, D]).
    const int64_t m = decode.input("blocks").shape()[1];
    int64_t poolBlocks = 0;
    for (int32_t i = 0; i < artifact.stateCount(); ++i) {
      const tfc_tensor_desc_t& cache = artifact.state(i);
      if (std::string_view(cache.name).rfind("kv.", 0) == 0 && cache.rank == 4) {
        poolBlocks = cache.shape[0];
        if (cache.shape[2] * m != *nCtx) poolBlocks = 0;
        break;
      }
    }
    if (m <= 0 || poolBlocks <= 0 ||
        state->prefillRow.input("blocks").shape() != std::vector<int64_t>{1, m}) {
      return Status::error(TFC_INVALID_ARGUMENT,
                           "the paged serving entries disagree with the KV cache on the block "
                           "table (n_ctx %lld): %s, %s",
                           static_cast<long long>(*nCtx), state->prefillRow.signature().c_str(),
                           decode.signature().c_str());
    }
    state->tableBlocks = m;
    state->pool.emplace(poolBlocks, *nCtx / m);
  }
  state->slots.resize(static_cast<size_t>(rows));
  return BatchedGenerator(std::move(state));
}

void BatchedGenerator::setTokenizer(std::shared_ptr<const Tokenizer> tokenizer) {
  state_->tokenizer = std::move(tokenizer);
}

int64_t BatchedGenerator::rows() const { return state_->rows; }
int64_t BatchedGenerator::prefillChunk() const { return state_->chunk; }
int64_t BatchedGenerator::vocabSize() const { return state_->vocab; }
int64_t BatchedGenerator::contextLength() const { return state_->nCtx; }
BatchedGenerator::Counters BatchedGenerator::counters() const { return state_->counters; }

BatchedGenerator::KvBlocks BatchedGenerator::kvBlocks() const {
  if (!state_->pool) return {};
  const internal::KvBlockPool& pool = *state_->pool;
  return {pool.blocks(), pool.used(), pool.cached(), pool.blockSize()};
}

void BatchedGenerator::setPrefillChunksPerStep(int64_t chunks) {
  state_->prefillChunksPerStep = std::max<int64_t>(1, chunks);
}

StatusOr<int64_t> BatchedGenerator::submit(std::vector<int32_t> prompt,
                                           const GenerationOptions& options,
                                           TokenCallback onToken, RequestDone onDone) {
  TFC_RETURN_IF_ERROR(checkPrompt(prompt, state_->vocab, state_->nCtx));
  TFC_RETURN_IF_ERROR(checkGenerationOptions(options));
  Request request;
  request.toPrefill = prompt;
  request.prompt = std::move(prompt);
  request.options = options;
  request.onToken = std::move(onToken);
  request.onDone = std::move(onDone);
  request.submitted = Clock::now();
  std::lock_guard<std::mutex> lock(state_->mutex);
  request.id = state_->nextId++;
  request.result.id = request.id;
  request.result.promptTokens = static_cast<int64_t>(request.prompt.size());
  const int64_t id = request.id;
  state_->queue.push_back(std::move(request));
  return id;
}

bool BatchedGenerator::cancel(int64_t id) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  bool known = std::any_of(state_->queue.begin(), state_->queue.end(),
                           [&](const Request& r) { return r.id == id; }) ||
               std::count(state_->runningIds.begin(), state_->runningIds.end(), id) > 0;
  if (known) state_->cancelRequests.push_back(id);
  return known;
}

int64_t BatchedGenerator::queued() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return static_cast<int64_t>(state_->queue.size());
}

int64_t BatchedGenerator::running() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return static_cast<int64_t>(state_->runningIds.size());
}

void BatchedGenerator::State::finish(int64_t row, StopReason reason, bool cancelled) {
  Request& request = *slots[static_cast<size_t>(row)];
  releaseBlocks(request);
  request.result.stopReason = reason;
  request.result.cancelled = cancelled;
  if (request.result.generatedTokens > 0 || cancelled) {
    request.result.totalMs = millisBetween(request.submitted, Clock::now());
  }
  RequestDone onDone = std::move(request.onDone);
  RequestResult result = std::move(request.result);
  {
    std::lock_guard<std::mutex> lock(mutex);
    runningIds.erase(std::remove(runningIds.begin(), runningIds.end(), result.id),
                     runningIds.end());
  }
  slots[static_cast<size_t>(row)].reset();
  if (onDone) onDone(result);
}

void BatchedGenerator::State::admit() {
  std::vector<Request> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex);
    // Cancellations first: queued requests leave the queue, running ones stop here.
    for (int64_t id : cancelRequests) {
      auto it = std::find_if(queue.begin(), queue.end(), [&](const Request& r) { return r.id == id; });
      if (it != queue.end()) {
        dropped.push_back(std::move(*it));
        queue.erase(it);
      }
      for (auto& slot : slots) {
        if (slot && slot->id == id) slot->cancelled = true;
      }
    }
    cancelRequests.clear();
    const Clock::time_point now = Clock::now();
    for (size_t row = 0; row < slots.size() && !queue.empty(); ++row) {
      if (slots[row]) continue;
      // Oldest first: a request the pool cannot hold yet waits, and so do those behind it.
      // A block of headroom per running request, so that one admitted now is not preempted
      // at the next step (admitted and preempted over and over, recomputing its prompt).
      if (pool && !takeBlocks(queue.front(), static_cast<int64_t>(runningIds.size()))) break;
      Request request = std::move(queue.front());
      queue.pop_front();
      // (A preempted request keeps the wait before its first row.)
      if (request.result.row < 0) request.result.queuedMs = millisBetween(request.submitted, now);
      request.result.row = static_cast<int64_t>(row);
      runningIds.push_back(request.id);
      slots[row] = std::move(request);
    }
  }
  for (Request& request : dropped) {
    request.result.stopReason = StopReason::kCallback;
    request.result.cancelled = true;
    request.result.totalMs = millisBetween(request.submitted, Clock::now());
    if (request.onDone) request.onDone(request.result);
  }
  for (size_t row = 0; row < slots.size(); ++row) {
    if (slots[row] && slots[row]->cancelled) {
      finish(static_cast<int64_t>(row), StopReason::kCallback, /*cancelled=*/true);
    }
  }
}

bool BatchedGenerator::State::takeBlocks(Request& request, int64_t headroom) {
  const int64_t size = pool->blockSize();
  const int64_t length = static_cast<int64_t>(request.toPrefill.size());
  // Cached whole blocks of its tokens, leaving the last token to compute (its logits), and
  // none in the span a last chunk moved back before n_ctx recomputes (prefillStep): those
  // slots are rewritten, and a shared block must not be.
  const int64_t reusable = std::min((length - 1) / size, (nCtx - chunk) / size);
  std::vector<int32_t> blocks = pool->matchPrefix(request.toPrefill, reusable);
  const int64_t reused = static_cast<int64_t>(blocks.size());
  const int64_t fresh = (length + size - 1) / size - reused;
  if (fresh + headroom > pool->available()) {
    for (int32_t id : blocks) pool->release(id);
    return false;
  }
  for (int64_t i = 0; i < fresh; ++i) blocks.push_back(*pool->allocate());
  request.blocks = std::move(blocks);
  request.prefilled = reused * size;
  request.published = reused;
  counters.prefixReusedTokens += reused * size;
  return true;
}

void BatchedGenerator::State::releaseBlocks(Request& request) {
  if (!pool) return;
  for (int32_t id : request.blocks) pool->release(id);
  request.blocks.clear();
  request.published = 0;
}

void BatchedGenerator::State::preempt(size_t row) {
  Request request = std::move(*slots[row]);
  slots[row].reset();
  releaseBlocks(request);
  // Recomputed later: the prompt and the generated tokens already in the cache (all but
  // the latest, which decoding writes next). Published prefix blocks make it cheap.
  request.toPrefill = request.prompt;
  if (request.result.generatedTokens > 0) {
    request.toPrefill.insert(request.toPrefill.end(), request.result.tokens.begin(),
                             request.result.tokens.end() - 1);
  }
  request.prefilled = 0;
  ++counters.preemptions;
  std::lock_guard<std::mutex> lock(mutex);
  runningIds.erase(std::remove(runningIds.begin(), runningIds.end(), request.id),
                   runningIds.end());
  queue.push_front(std::move(request));
}

void BatchedGenerator::State::growTables() {
  // Oldest first, so that the youngest give way.
  std::vector<size_t> generating;
  for (size_t row = 0; row < slots.size(); ++row) {
    if (slots[row] && !slots[row]->prefilling()) generating.push_back(row);
  }
  std::sort(generating.begin(), generating.end(),
            [&](size_t a, size_t b) { return slots[a]->id < slots[b]->id; });
  for (size_t row : generating) {
    while (slots[row]) {
      Request& request = *slots[row];
      if (static_cast<int64_t>(request.blocks.size()) > request.position / pool->blockSize()) {
        break;
      }
      if (std::optional<int32_t> id = pool->allocate()) {
        request.blocks.push_back(*id);
        continue;
      }
      // The pool is full: the youngest running request goes back to the queue.
      size_t youngest = row;
      for (size_t other = 0; other < slots.size(); ++other) {
        if (slots[other] && slots[other]->id > slots[youngest]->id) youngest = other;
      }
      preempt(youngest);
    }
  }
}

void BatchedGenerator::State::fillTable(int32_t* table, const Request* request) const {
  for (int64_t i = 0; i < tableBlocks; ++i) {
    table[i] = request && i < static_cast<int64_t>(request->blocks.size())
                   ? request->blocks[static_cast<size_t>(i)]
                   : -1;  // no block: the kernels drop writes there
  }
}

StatusOr<int32_t> BatchedGenerator::State::drawOne(const Request& request, const float* logits) {
  const SamplingOptions& sampling = request.options.sampling;
  if (sampling.temperature <= 0) {
    // Greedy: the sample entry's argmax (ties to the lowest id), here, without a call that
    // would scan all G rows (0.9 ms a token for gpt2-124m at G = 16: 4% of a decode step).
    const Clock::time_point start = Clock::now();
    int32_t best = 0;
    for (int32_t v = 0; v < vocab; ++v) {
      if (std::isnan(logits[v])) {
        return Status::error(TFC_FAILED_PRECONDITION,
                             "the logits of request %lld contain NaN (at token %d)",
                             static_cast<long long>(request.id), v);
      }
      if (logits[v] > logits[best]) best = v;
    }
    counters.sampleMs += millisBetween(start, Clock::now());
    return best;
  }
  // Row 0 of the sample entry, as Generator draws: the draw is keyed by (seed, row), so the
  // same seed gives the same token in any row of the batch.
  std::memcpy(sample.input("logits").mutableDataAs<float>(), logits,
              static_cast<size_t>(vocab) * sizeof(float));
  *sample.input("temperature").mutableDataAs<float>() = static_cast<float>(sampling.temperature);
  *sample.input("top_k").mutableDataAs<int32_t>() = sampling.topK;
  *sample.input("top_p").mutableDataAs<float>() = static_cast<float>(sampling.topP);
  *sample.input("seed").mutableDataAs<int64_t>() = sampling.seed + request.result.generatedTokens;
  const Clock::time_point start = Clock::now();
  Status status = sample.call(context);
  counters.sampleMs += millisBetween(start, Clock::now());
  ++counters.sampleCalls;
  if (!status.ok()) {
    return Status::error(status.code(), "sample for request %lld: %s",
                         static_cast<long long>(request.id), status.message());
  }
  const int32_t id = sample.output("ids").dataAs<int32_t>()[0];
  if (id < 0 || id >= vocab) {
    return Status::error(TFC_INTERNAL, "sample returned token %d, outside the vocabulary", id);
  }
  return id;
}

void BatchedGenerator::State::deliver(int64_t row, int32_t token, Clock::time_point now) {
  Request& request = *slots[static_cast<size_t>(row)];
  RequestResult& result = request.result;
  if (result.generatedTokens == 0) result.firstTokenMs = millisBetween(request.submitted, now);
  ++result.generatedTokens;
  result.tokens.push_back(token);
  result.totalMs = millisBetween(request.submitted, now);
  std::optional<int32_t> eos;
  if (tokenizer && request.options.stopAtEndOfText) eos = tokenizer->eosId();
  std::string bytes;
  if (tokenizer && !(eos && token == *eos) && token < tokenizer->vocabSize()) {
    auto decoded = tokenizer->decode(&token, 1);
    if (decoded.ok()) bytes = std::move(decoded).value();
  }
  if (request.onToken && !request.onToken(token, bytes)) return finish(row, StopReason::kCallback);
  if (eos && token == *eos) return finish(row, StopReason::kEndOfText);
  const std::vector<int32_t>& stops = request.options.stopTokens;
  if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
    return finish(row, StopReason::kStopToken);
  }
  if (result.generatedTokens >= request.options.maxNewTokens) {
    return finish(row, StopReason::kMaxNewTokens);
  }
  // The token goes into the cache at the next position, if there is one.
  const int64_t position = result.promptTokens + result.generatedTokens - 1;
  if (position >= nCtx) return finish(row, StopReason::kContextLimit);
  request.position = position;
  request.latest = token;
}

Status BatchedGenerator::State::prefillStep() {
  int32_t* tokens = prefillRow.input("tokens").mutableDataAs<int32_t>();
  // The step's budget of chunks goes to the requests still reading their prompts, oldest
  // first: the oldest reads on until its prompt is done, then the next (first come, first
  // served, as the queue).
  std::vector<size_t> reading;
  for (size_t row = 0; row < slots.size(); ++row) {
    if (slots[row] && slots[row]->prefilling()) reading.push_back(row);
  }
  std::sort(reading.begin(), reading.end(),
            [&](size_t a, size_t b) { return slots[a]->id < slots[b]->id; });
  int64_t budget = prefillChunksPerStep;
  for (size_t k = 0; k < reading.size() && budget > 0;) {
    const size_t row = reading[k];
    if (!slots[row] || !slots[row]->prefilling()) {
      ++k;
      continue;
    }
    --budget;
    Request& request = *slots[row];
    const std::vector<int32_t>& input = request.toPrefill;
    const int64_t promptLen = static_cast<int64_t>(input.size());
    // As Generator: chunks at 0, P, 2P, ...; one that would pass n_ctx starts earlier,
    // recomputing slots already in the cache (the same values).
    const int64_t at = std::min(request.prefilled, nCtx - chunk);
    const int64_t n = std::min(chunk, promptLen - at);
    for (int64_t j = 0; j < chunk; ++j) tokens[j] = j < n ? input[at + j] : 0;
    if (pool) {
      fillTable(prefillRow.input("blocks").mutableDataAs<int32_t>(), &request);
    } else {
      *prefillRow.input("row").mutableDataAs<int32_t>() = static_cast<int32_t>(row);
    }
    *prefillRow.input("pos").mutableDataAs<int32_t>() = static_cast<int32_t>(at);
    *prefillRow.input("n").mutableDataAs<int32_t>() = static_cast<int32_t>(n);
    const Clock::time_point start = Clock::now();
    Status status = prefillRow.call(context);
    counters.prefillMs += millisBetween(start, Clock::now());
    ++counters.prefillCalls;
    if (!status.ok()) {
      return Status::error(status.code(), "prefill of request %lld at position %lld: %s",
                           static_cast<long long>(request.id), static_cast<long long>(at),
                           status.message());
    }
    request.prefilled = at + n;
    if (request.prefilled < promptLen) continue;
    if (pool) {
      // Its whole blocks may serve later prompts that start with the same tokens.
      for (; request.published < promptLen / pool->blockSize(); ++request.published) {
        pool->publish(request.blocks[static_cast<size_t>(request.published)], input,
                      (request.published + 1) * pool->blockSize());
      }
    }
    // A preempted request is back where it was: its latest token decodes next.
    if (request.result.generatedTokens > 0) continue;
    TFC_ASSIGN_OR_RETURN(int32_t token,
                         drawOne(request, prefillRow.output("logits").dataAs<float>()));
    deliver(static_cast<int64_t>(row), token, Clock::now());
  }
  return Status();
}

Status BatchedGenerator::State::decodeStep() {
  // The smallest decode entry that covers every generating row (requests take the lowest
  // free rows, so a few running requests decode a few rows).
  if (pool) growTables();
  int64_t highest = -1;
  for (size_t row = 0; row < slots.size(); ++row) {
    if (slots[row] && !slots[row]->prefilling()) highest = static_cast<int64_t>(row);
  }
  if (highest < 0) return Status();
  auto chosen = std::find_if(decodeRows.begin(), decodeRows.end(),
                             [&](const auto& entry) { return entry.first > highest; });
  const int64_t decoded = chosen->first;
  BoundEntry& entry = chosen->second;
  int32_t* token = entry.input("token").mutableDataAs<int32_t>();
  int32_t* pos = entry.input("pos").mutableDataAs<int32_t>();
  int32_t* tables = pool ? entry.input("blocks").mutableDataAs<int32_t>() : nullptr;
  int64_t generating = 0;
  for (size_t row = 0; row < static_cast<size_t>(decoded); ++row) {
    token[row] = 0;
    pos[row] = 0;  // a free row: its cache is rewritten from 0 by the next prefill
    const bool decodes = slots[row] && !slots[row]->prefilling();
    if (tables) {
      // A row that is not generating has no blocks: its write is dropped.
      fillTable(tables + row * tableBlocks, decodes ? &*slots[row] : nullptr);
    }
    if (!slots[row]) continue;
    const Request& request = *slots[row];
    if (request.prefilling()) {
      if (tables) continue;
      // Still reading its prompt: the slot of its next chunk, which that chunk rewrites.
      pos[row] = static_cast<int32_t>(std::min(request.prefilled, nCtx - chunk));
      continue;
    }
    token[row] = request.latest;
    pos[row] = static_cast<int32_t>(request.position);
    ++generating;
  }
  Clock::time_point start = Clock::now();
  Status status = entry.call(context);
  counters.decodeMs += millisBetween(start, Clock::now());
  ++counters.decodeCalls;
  counters.decodedTokens += generating;
  if (!status.ok()) {
    return Status::error(status.code(), "%s: %s", entry.name().c_str(), status.message());
  }

  // Each row's next token from its own logits (drawOne).
  const float* logits = entry.output("logits").dataAs<float>();
  const Clock::time_point now = Clock::now();
  for (size_t row = 0; row < static_cast<size_t>(decoded); ++row) {
    if (!slots[row] || slots[row]->prefilling()) continue;
    TFC_ASSIGN_OR_RETURN(int32_t next, drawOne(*slots[row], logits + row * vocab));
    deliver(static_cast<int64_t>(row), next, now);
  }
  return Status();
}

Status BatchedGenerator::step() {
  State& s = *state_;
  s.admit();
  ++s.counters.steps;
  // A request whose prompt ends in this step's prefill samples its first token there, and
  // the decode of the same step already writes it.
  Status status = s.prefillStep();
  if (status.ok()) status = s.decodeStep();
  if (!status.ok()) {
    // A failed call leaves the caches in an unknown state: end every running request.
    for (size_t row = 0; row < s.slots.size(); ++row) {
      if (!s.slots[row]) continue;
      s.slots[row]->result.error = status.message();
      s.finish(static_cast<int64_t>(row), StopReason::kCallback);
    }
  }
  return status;
}

Status BatchedGenerator::runUntilIdle() {
  while (!idle()) TFC_RETURN_IF_ERROR(step());
  return Status();
}

}  // namespace tfc

// ------------------------------------------------------------------------------ C API

struct tfc_batched_generator_s {
  tfc::BatchedGenerator generator;
};


extern "C" {

tfc_status_t tfc_batched_generator_create(tfc_context_t* context,
                                          const tfc_generator_options_t* options,
                                          tfc_batched_generator_t** out_generator) {
  if (context == nullptr || out_generator == nullptr) {
    return tfc::Status::error(TFC_INVALID_ARGUMENT,
                              "tfc_batched_generator_create: context and out_generator must "
                              "not be NULL")
        .release();
  }
  auto generator = tfc::internal::createGeneratorFromC<tfc::BatchedGenerator>(context, options);
  if (!generator.ok()) return std::move(generator).takeStatus().release();
  *out_generator = new tfc_batched_generator_s{std::move(generator).value()};
  return nullptr;
}

void tfc_batched_generator_destroy(tfc_batched_generator_t* generator) { delete generator; }

int64_t tfc_batched_generator_rows(const tfc_batched_generator_t* g) {
  return g->generator.rows();
}

tfc_status_t tfc_batched_generator_submit(tfc_batched_generator_t* generator,
                                          const int32_t* prompt, size_t prompt_length,
                                          const tfc_generate_options_t* options,
                                          tfc_token_callback_t callback,
                                          tfc_request_done_callback_t done, void* user_data,
                                          int64_t* out_id) {
  if (generator == nullptr || (prompt == nullptr && prompt_length > 0)) {
    return tfc::Status::error(TFC_INVALID_ARGUMENT,
                              "tfc_batched_generator_submit: generator is NULL, or prompt is "
                              "NULL with a length")
        .release();
  }
  tfc_generate_options_t defaults;
  tfc_generate_options_initialize(&defaults);
  tfc::TokenCallback onToken;
  if (callback != nullptr) {
    onToken = [callback, user_data](int32_t id, std::string_view bytes) {
      return callback(user_data, id, bytes.empty() ? nullptr : bytes.data(), bytes.size());
    };
  }
  tfc::RequestDone onDone;
  if (done != nullptr) {
    onDone = [done, user_data](const tfc::RequestResult& r) {
      tfc_request_result_t c{};
      c.id = r.id;
      c.row = r.row;
      c.prompt_tokens = r.promptTokens;
      c.generated_tokens = r.generatedTokens;
      c.stop_reason = static_cast<tfc_stop_reason_t>(r.stopReason);
      c.cancelled = r.cancelled;
      c.error = r.error.empty() ? nullptr : r.error.c_str();
      c.queued_ms = r.queuedMs;
      c.first_token_ms = r.firstTokenMs;
      c.total_ms = r.totalMs;
      c.tokens = r.tokens.data();
      done(user_data, &c);
    };
  }
  auto id = generator->generator.submit(std::vector<int32_t>(prompt, prompt + prompt_length),
                                        tfc::internal::generationOptionsFromC(options ? *options : defaults), std::move(onToken),
                                        std::move(onDone));
  if (!id.ok()) return std::move(id).takeStatus().release();
  if (out_id != nullptr) *out_id = *id;
  return nullptr;
}

bool tfc_batched_generator_cancel(tfc_batched_generator_t* generator, int64_t id) {
  return generator != nullptr && generator->generator.cancel(id);
}

int64_t tfc_batched_generator_queued(const tfc_batched_generator_t* g) {
  return g->generator.queued();
}

int64_t tfc_batched_generator_running(const tfc_batched_generator_t* g) {
  return g->generator.running();
}

tfc_status_t tfc_batched_generator_step(tfc_batched_generator_t* generator) {
  if (generator == nullptr) {
    return tfc::Status::error(TFC_INVALID_ARGUMENT, "tfc_batched_generator_step: NULL").release();
  }
  return generator->generator.step().release();
}

tfc_status_t tfc_batched_generator_run_until_idle(tfc_batched_generator_t* generator) {
  if (generator == nullptr) {
    return tfc::Status::error(TFC_INVALID_ARGUMENT, "tfc_batched_generator_run_until_idle: NULL")
        .release();
  }
  return generator->generator.runUntilIdle().release();
}

}  // extern "C"
