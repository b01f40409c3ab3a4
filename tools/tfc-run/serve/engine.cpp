#include "serve/engine.hpp"

#include <cstdio>
#include <random>

#include "serve/text_stream.hpp"

namespace tfc::serve {
namespace {

using Clock = std::chrono::steady_clock;

double secondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

enum Finish { kStop = 0, kLength = 1, kAbort = 2, kError = 3 };
const char* kFinishNames[] = {"stop", "length", "abort", "error"};

}  // namespace

// ------------------------------------------------------------------------------ channel
bool RequestChannel::wait(std::chrono::milliseconds timeout, std::vector<std::string>* pieces) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return done_ || !pieces_.empty(); });
  for (std::string& piece : pieces_) pieces->push_back(std::move(piece));
  pieces_.clear();
  return done_;
}

std::string RequestChannel::waitAll() {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait(lock, [&] { return done_; });
  std::string text;
  for (const std::string& piece : pieces_) text += piece;
  pieces_.clear();
  return text;
}

void RequestChannel::append(const std::string& text) {
  if (text.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  pieces_.push_back(text);
  ready_.notify_all();
}

void RequestChannel::end(Outcome outcome) {
  std::lock_guard<std::mutex> lock(mutex_);
  outcome_ = std::move(outcome);
  done_ = true;
  ready_.notify_all();
}

// ------------------------------------------------------------------------------ histogram
void Histogram::add(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (seconds <= bounds_[i]) ++counts_[i];
  }
  ++count_;
  sum_ += seconds;
}

void Histogram::write(std::string* out, const std::string& name, const std::string& help) const {
  std::lock_guard<std::mutex> lock(mutex_);
  *out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  char line[160];
  for (size_t i = 0; i < bounds_.size(); ++i) {
    std::snprintf(line, sizeof line, "%s_bucket{le=\"%g\"} %llu\n", name.c_str(), bounds_[i],
                  static_cast<unsigned long long>(counts_[i]));
    *out += line;
  }
  std::snprintf(line, sizeof line, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n",
                name.c_str(), static_cast<unsigned long long>(count_), name.c_str(), sum_,
                name.c_str(), static_cast<unsigned long long>(count_));
  *out += line;
}

// ------------------------------------------------------------------------------ engine
Engine::Engine(BatchedGenerator generator, std::shared_ptr<const Tokenizer> tokenizer,
               EngineOptions options)
    : generator_(std::move(generator)),
      tokenizer_(std::move(tokenizer)),
      options_(options),
      firstToken_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      interToken_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}) {
  generator_.setTokenizer(tokenizer_);
  rows_ = generator_.rows();
  contextLength_ = generator_.contextLength();
  kvBlocks_ = generator_.kvBlocks().total;
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  stopping_ = true;
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

StatusOr<std::shared_ptr<RequestChannel>> Engine::submit(std::vector<int32_t> prompt,
                                                         const GenerationOptions& options,
                                                         std::vector<std::string> stops) {
  if (draining_) {
    ++rejected_;
    return Status::error(TFC_FAILED_PRECONDITION, "the server is shutting down");
  }
  // Queued requests that a free row takes at the next step are not waiting.
  const int64_t freeRows = rows_ - running_.load();
  if (generator_.queued() >= options_.maxQueued + freeRows) {
    ++rejected_;
    return Status::error(TFC_FAILED_PRECONDITION,
                         "the queue is full (%lld requests wait for one of %lld rows); retry "
                         "later",
                         static_cast<long long>(options_.maxQueued),
                         static_cast<long long>(rows_));
  }
  auto channel = std::make_shared<RequestChannel>();
  auto text = std::make_shared<TextStream>(std::move(stops));
  auto last = std::make_shared<Clock::time_point>(Clock::now());
  auto first = std::make_shared<bool>(true);
  const int64_t promptTokens = static_cast<int64_t>(prompt.size());
  RequestChannel* raw = channel.get();
  TokenCallback onToken = [this, raw, text, last, first](int32_t, std::string_view bytes) {
    const Clock::time_point now = Clock::now();
    if (*first) {
      firstToken_.add(secondsBetween(*last, now));  // |last| holds the submit time
      *first = false;
    } else {
      interToken_.add(secondsBetween(*last, now));
    }
    *last = now;
    ++generatedTokens_;
    if (raw->abandoned_ || raw->aborted_) return false;
    bool stopped = false;
    raw->append(text->push(bytes, &stopped));
    return !stopped;
  };
  RequestDone onDone = [this, raw, text](const RequestResult& result) {
    Outcome outcome;
    outcome.promptTokens = result.promptTokens;
    outcome.completionTokens = result.generatedTokens;
    Finish finish = kStop;
    if (!result.error.empty()) {
      finish = kError;
      outcome.error = result.error;
    } else if (raw->aborted_) {
      finish = kAbort;
    } else if (result.stopReason == StopReason::kMaxNewTokens ||
               result.stopReason == StopReason::kContextLimit) {
      finish = kLength;
    }
    outcome.finishReason = kFinishNames[finish];
    ++finished_[finish];
    if (raw->abandoned_) ++abandoned_;
    raw->append(text->finish());
    std::shared_ptr<RequestChannel> keep;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = channels_.find(raw->id_);
      if (it != channels_.end()) {
        keep = it->second;
        channels_.erase(it);
      }
    }
    raw->end(std::move(outcome));
  };
  std::lock_guard<std::mutex> lock(mutex_);
  auto id = generator_.submit(std::move(prompt), options, std::move(onToken), std::move(onDone));
  if (!id.ok()) return std::move(id).takeStatus();
  channel->id_ = *id;
  channels_[*id] = channel;
  promptTokens_ += static_cast<uint64_t>(promptTokens);
  wake_.notify_all();
  return channel;
}

void Engine::loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !channels_.empty(); });
      if (stopping_ && channels_.empty()) return;
    }
    if (generator_.idle()) {
      // Channels whose requests already ended are gone from the map; a submit raced us.
      std::this_thread::yield();
      continue;
    }
    Status status = generator_.step();
    if (!status.ok()) {
      std::fprintf(stderr, "tfc-run serve: error: %s (the running requests were ended)\n",
                   status.message());
    }
    queued_ = generator_.queued();
    running_ = generator_.running();
    const BatchedGenerator::KvBlocks kv = generator_.kvBlocks();
    kvBlocksUsed_ = kv.used;
    kvBlocksCached_ = kv.cached;
    kvBlocks_ = kv.total;
    const BatchedGenerator::Counters counters = generator_.counters();
    prefixReusedTokens_ = counters.prefixReusedTokens;
    preemptions_ = counters.preemptions;
    if (options_.testStepDelay.count() > 0) std::this_thread::sleep_for(options_.testStepDelay);
  }
}

void Engine::drain(double timeoutSeconds) {
  draining_ = true;
  const Clock::time_point start = Clock::now();
  while (secondsBetween(start, Clock::now()) < timeoutSeconds) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (channels_.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [id, channel] : channels_) {
      channel->aborted_ = true;
      generator_.cancel(id);
    }
  }
  stopping_ = true;
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string Engine::metricsText() const {
  std::string out;
  auto gauge = [&](const char* name, const char* help, double value, const char* type) {
    char line[320];
    std::snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name,
                  type, name, value);
    out += line;
  };
  gauge("tfc_requests_running", "Requests generating in a row of the batch.",
        static_cast<double>(running_), "gauge");
  gauge("tfc_requests_queued", "Requests waiting for a free row.", static_cast<double>(queued_),
        "gauge");
  gauge("tfc_rows", "Rows of the generation batch (requests that run at once).",
        static_cast<double>(rows_), "gauge");
  gauge("tfc_kv_cache_rows_used", "Rows of the KV cache held by running requests.",
        static_cast<double>(running_), "gauge");
  if (kvBlocks_ > 0) {
    gauge("tfc_kv_blocks", "Blocks of the paged KV cache.", static_cast<double>(kvBlocks_),
          "gauge");
    gauge("tfc_kv_blocks_used", "Blocks of the paged KV cache held by running requests.",
          static_cast<double>(kvBlocksUsed_), "gauge");
    gauge("tfc_kv_blocks_cached",
          "Blocks no request holds that keep a prompt prefix for reuse (evicted first when "
          "blocks run out).",
          static_cast<double>(kvBlocksCached_), "gauge");
    gauge("tfc_prefix_reused_tokens_total",
          "Prompt tokens taken from cached prefix blocks instead of computed.",
          static_cast<double>(prefixReusedTokens_), "counter");
    gauge("tfc_preemptions_total",
          "Requests sent back to the queue (and recomputed) when the blocks ran out.",
          static_cast<double>(preemptions_), "counter");
  }
  gauge("tfc_prompt_tokens_total", "Prompt tokens of the admitted requests.",
        static_cast<double>(promptTokens_), "counter");
  gauge("tfc_generation_tokens_total", "Tokens generated.",
        static_cast<double>(generatedTokens_), "counter");
  gauge("tfc_requests_rejected_total", "Requests refused: a full queue or a shutdown.",
        static_cast<double>(rejected_), "counter");
  gauge("tfc_requests_abandoned_total",
        "Requests whose client went away before the end (their rows freed at once).",
        static_cast<double>(abandoned_), "counter");
  out += "# HELP tfc_requests_finished_total Requests ended, by finish reason.\n"
         "# TYPE tfc_requests_finished_total counter\n";
  for (int i = 0; i < 4; ++i) {
    out += "tfc_requests_finished_total{reason=\"" + std::string(kFinishNames[i]) + "\"} " +
           std::to_string(finished_[i].load()) + "\n";
  }
  firstToken_.write(&out, "tfc_time_to_first_token_seconds",
                    "From a request's arrival to its first token.");
  interToken_.write(&out, "tfc_inter_token_latency_seconds",
                    "Between consecutive tokens of a request.");
  return out;
}

}  // namespace tfc::serve
