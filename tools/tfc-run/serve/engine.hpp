// The serving engine: one thread runs a BatchedGenerator step after step while HTTP threads
// submit requests and read their text as it comes (a RequestChannel each). It owns the
// queue bound, the drain at shutdown and the counters /metrics shows.
#ifndef TFC_RUN_SERVE_ENGINE_HPP_
#define TFC_RUN_SERVE_ENGINE_HPP_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tfc/runtime/batched_generator.hpp"
#include "tfc/runtime/status.hpp"
#include "tfc/runtime/tokenizer.hpp"

namespace tfc::serve {

// How a request ended, for its last response or event.
struct Outcome {
  std::string finishReason;  // "stop", "length", "abort" (cut by a shutdown), "error"
  std::string error;         // with "error": why
  int64_t promptTokens = 0, completionTokens = 0;
};

// One request's text as it is generated: written by the engine thread, read by the thread
// that answers the request.
class RequestChannel {
 public:
  // Waits up to |timeout| for new text or the end. Appends the new text to |*pieces|, a
  // piece a token (a stream sends each as its own event, as OpenAI does); returns true once
  // the request has ended (then outcome() is final).
  bool wait(std::chrono::milliseconds timeout, std::vector<std::string>* pieces);
  // Waits for the end; the whole text.
  std::string waitAll();
  const Outcome& outcome() const { return outcome_; }
  int64_t id() const { return id_; }
  // The client went away: the engine stops the request at its next token.
  void abandon() { abandoned_ = true; }

 private:
  friend class Engine;
  void append(const std::string& text);
  void end(Outcome outcome);

  int64_t id_ = 0;
  std::atomic<bool> abandoned_{false};
  std::atomic<bool> aborted_{false};  // cut by drain()
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::string> pieces_;
  bool done_ = false;
  Outcome outcome_;
};

struct EngineOptions {
  int64_t maxQueued = 64;  // requests waiting for a row beyond which submit() refuses
  // Test only (TFC_SERVE_TEST_STEP_DELAY_MS): a pause after every step, so that a tiny
  // model's requests last long enough to be cut, queued or drained by a test.
  std::chrono::milliseconds testStepDelay{0};
};

// Prometheus histogram of seconds.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size()) {}
  void add(double seconds);
  void write(std::string* out, const std::string& name, const std::string& help) const;

 private:
  mutable std::mutex mutex_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  double sum_ = 0;
};

class Engine {
 public:
  Engine(BatchedGenerator generator, std::shared_ptr<const Tokenizer> tokenizer,
         EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request. FAILED_PRECONDITION when the queue is full or the engine is shutting
  // down (HTTP 503);
  // INVALID_ARGUMENT for a prompt the model cannot take (400).
  StatusOr<std::shared_ptr<RequestChannel>> submit(std::vector<int32_t> prompt,
                                                   const GenerationOptions& options,
                                                   std::vector<std::string> stops);

  // Stops admitting requests, lets the queued and running ones finish for up to
  // |timeoutSeconds|, cuts those left (finish reason "abort") and stops the thread.
  void drain(double timeoutSeconds);
  bool draining() const { return draining_; }

  int64_t rows() const { return rows_; }
  int64_t contextLength() const { return contextLength_; }
  // The Prometheus text exposition of the counters.
  std::string metricsText() const;

 private:
  void loop();

  BatchedGenerator generator_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  EngineOptions options_;
  int64_t rows_ = 0, contextLength_ = 0;

  std::mutex mutex_;  // guards channels_, wakes the loop
  std::condition_variable wake_;
  std::map<int64_t, std::shared_ptr<RequestChannel>> channels_;
  std::atomic<bool> draining_{false}, stopping_{false};
  std::thread thread_;

  // Counters (engine thread writes; /metrics reads).
  std::atomic<int64_t> queued_{0}, running_{0};
  // A paged KV cache (all 0 otherwise): blocks held, cached for reuse, in all; reuse.
  std::atomic<int64_t> kvBlocksUsed_{0}, kvBlocksCached_{0}, kvBlocks_{0};
  std::atomic<int64_t> prefixReusedTokens_{0}, preemptions_{0};
  std::atomic<uint64_t> promptTokens_{0}, generatedTokens_{0}, rejected_{0}, abandoned_{0};
  std::atomic<uint64_t> finished_[4] = {};  // stop, length, abort, error
  Histogram firstToken_, interToken_;
};

}  // namespace tfc::serve

#endif  // TFC_RUN_SERVE_ENGINE_HPP_
