#include "tfc/runtime/generator.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "loops/generator_c_api.hpp"
#include "core/runtime_internal.hpp"
#include "tfc/runtime/metadata.hpp"

namespace tfc {
namespace {

using Clock = std::chrono::steady_clock;

double millisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double perSecond(int64_t count, double ms) {
  return ms > 0 ? 1000.0 * static_cast<double>(count) / ms : 0.0;
}

}  // namespace

const char* stopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kMaxNewTokens:
      return "reached the maximum of new tokens";
    case StopReason::kContextLimit:
      return "reached the context limit";
    case StopReason::kEndOfText:
      return "end of text";
    case StopReason::kStopToken:
      return "a stop token";
    case StopReason::kCallback:
      return "stopped by the caller";
  }
  return "?";
}

double GenerationStats::prefillTokensPerSecond() const {
  return perSecond(promptTokens, prefillMs);
}
double GenerationStats::decodeTokensPerSecond() const { return perSecond(decodeCalls, decodeMs); }

StatusOr<Generator> Generator::create(const Context& context) {
  Artifact artifact = context.artifact();
  Generator generator;
  generator.context_ = context;
  // A model with a paged KV cache (kv_block > 0) has only the serving entries: one sequence
  // runs as row 0 of prefill_row and decode_rows_1, its block table blocks 0, 1, 2, ...
  std::string prefillName = "prefill", decodeName = "decode";
  std::vector<TensorExpectation> prefillInputs = {
      {"tokens", TFC_DTYPE_I32, 2}, {"pos", TFC_DTYPE_I32, 0}, {"n", TFC_DTYPE_I32, 0}};
  std::vector<TensorExpectation> decodeInputs = {{"token", TFC_DTYPE_I32, 2},
                                                 {"pos", TFC_DTYPE_I32, 0}};
  const bool paged = !artifact.findEntry("prefill").ok() && artifact.findEntry("prefill_row").ok();
  if (paged) {
    prefillName = "prefill_row";
    prefillInputs.push_back({"blocks", TFC_DTYPE_I32, 2});
    decodeName = artifact.findEntry("decode_rows_1").ok() ? "decode_rows_1" : "decode_rows";
    decodeInputs = {{"token", TFC_DTYPE_I32, 2},
                    {"pos", TFC_DTYPE_I32, 1},
                    {"blocks", TFC_DTYPE_I32, 2}};
  }
  TFC_ASSIGN_OR_RETURN(generator.prefill_,
                       BoundEntry::create(artifact, prefillName, prefillInputs,
                                          {{"logits", TFC_DTYPE_F32, 2}}, "generate"));
  TFC_ASSIGN_OR_RETURN(generator.decode_,
                       BoundEntry::create(artifact, decodeName, decodeInputs,
                                          {{"logits", TFC_DTYPE_F32, 2}}, "generate"));
  TFC_ASSIGN_OR_RETURN(generator.sample_,
                       BoundEntry::create(artifact, "sample",
                                          {{"logits", TFC_DTYPE_F32, 2},
                                           {"temperature", TFC_DTYPE_F32, 0},
                                           {"top_k", TFC_DTYPE_I32, 0},
                                           {"top_p", TFC_DTYPE_F32, 0},
                                           {"seed", TFC_DTYPE_I64, 0}},
                                          {{"ids", TFC_DTYPE_I32, 1}}, "generate"));
  const BoundEntry& prefill = generator.prefill_;
  const BoundEntry& decode = generator.decode_;
  const BoundEntry& sample = generator.sample_;
  // The generation batch and the chunk come from prefill's tokens [B, P].
  const std::vector<int64_t>& tokens = generator.prefill_.input("tokens").shape();
  const int64_t batch = tokens[0];
  const int64_t vocab = prefill.output("logits").shape()[1];
  // (sample may have more rows: the paged serving entries' G; row 0 is drawn.)
  const std::vector<int64_t>& sampleLogits = generator.sample_.input("logits").shape();
  if (prefill.output("logits").shape()[0] != batch ||
      generator.decode_.input("token").shape() != std::vector<int64_t>{batch, 1} ||
      decode.output("logits").shape() != std::vector<int64_t>{batch, vocab} ||
      sampleLogits[0] < batch || sampleLogits[1] != vocab ||
      sample.output("ids").shape() != std::vector<int64_t>{sampleLogits[0]} ||
      (paged && (batch != 1 || generator.prefill_.input("blocks").shape() !=
                                    generator.decode_.input("blocks").shape()))) {
    return Status::error(
        TFC_INVALID_ARGUMENT, "the entries disagree on the batch or the vocabulary: %s, %s, %s",
        prefill.signature().c_str(), decode.signature().c_str(), sample.signature().c_str());
  }
  std::string metadata(artifact.metadataJson());
  std::optional<int64_t> nCtx = metadataInt(metadata, "n_ctx");
  if (!nCtx) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "the model's metadata does not give its context length (n_ctx); it "
                         "was not traced by tfc-trace? (metadata: '%s')",
                         metadata.c_str());
  }
  if (paged) {
    const int64_t blocks = generator.prefill_.input("blocks").shape()[1];
    for (BoundEntry* entry : {&generator.prefill_, &generator.decode_}) {
      int32_t* table = entry->input("blocks").mutableDataAs<int32_t>();
      for (int64_t i = 0; i < blocks; ++i) table[i] = static_cast<int32_t>(i);
    }
  }
  generator.batch_ = batch;
  generator.chunk_ = tokens[1];
  generator.vocab_ = vocab;
  generator.nCtx_ = *nCtx;
  generator.modelName_ = metadataValue(metadata, "model").value_or("model");
  return generator;
}

Status checkPrompt(const std::vector<int32_t>& prompt, int64_t vocab, int64_t nCtx) {
  if (prompt.empty()) return Status::error(TFC_INVALID_ARGUMENT, "the prompt is empty");
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= vocab) {
      return Status::error(TFC_INVALID_ARGUMENT,
                           "prompt token %d (at position %zu) is out of range: the model's "
                           "vocabulary has %lld tokens (ids 0..%lld)",
                           prompt[i], i, static_cast<long long>(vocab),
                           static_cast<long long>(vocab - 1));
    }
  }
  if (static_cast<int64_t>(prompt.size()) > nCtx) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "the prompt has %zu tokens, more than the model's context of %lld "
                         "(n_ctx)",
                         prompt.size(), static_cast<long long>(nCtx));
  }
  return Status();
}

Status checkGenerationOptions(const GenerationOptions& options) {
  if (options.maxNewTokens < 1) {
    return Status::error(TFC_INVALID_ARGUMENT, "the maximum of new tokens is %lld; give at least 1",
                         static_cast<long long>(options.maxNewTokens));
  }
  const SamplingOptions& sampling = options.sampling;
  if (!(sampling.temperature >= 0) || sampling.topK < 0 || !(sampling.topP > 0) ||
      sampling.topP > 1) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "sampling settings out of range: temperature %g (>= 0), top-k %d "
                         "(>= 0), top-p %g (in (0, 1])",
                         sampling.temperature, sampling.topK, sampling.topP);
  }
  return Status();
}

Status Generator::check(const std::vector<int32_t>& prompt) const {
  return checkPrompt(prompt, vocab_, nCtx_);
}

Status Generator::prefillPrompt(const std::vector<int32_t>& prompt, GenerationStats* stats) {
  const int64_t promptLen = static_cast<int64_t>(prompt.size());
  if (chunk_ <= nCtx_) {
    int32_t* tokens = prefill_.input("tokens").mutableDataAs<int32_t>();
    for (int64_t begin = 0; begin < promptLen; begin += chunk_) {
      int64_t at = std::min(begin, nCtx_ - chunk_);
      int64_t n = std::min(chunk_, promptLen - at);
      for (int64_t b = 0; b < batch_; ++b) {
        for (int64_t j = 0; j < chunk_; ++j) tokens[b * chunk_ + j] = j < n ? prompt[at + j] : 0;
      }
      *prefill_.input("pos").mutableDataAs<int32_t>() = static_cast<int32_t>(at);
      *prefill_.input("n").mutableDataAs<int32_t>() = static_cast<int32_t>(n);
      Status status = prefill_.call(context_);
      if (!status.ok()) {
        return Status::error(status.code(), "prefill at position %lld: %s",
                             static_cast<long long>(at), status.message());
      }
      ++stats->prefillCalls;
    }
    return Status();
  }
  int32_t* token = decode_.input("token").mutableDataAs<int32_t>();
  for (int64_t i = 0; i < promptLen; ++i) {
    for (int64_t b = 0; b < batch_; ++b) token[b] = prompt[i];
    *decode_.input("pos").mutableDataAs<int32_t>() = static_cast<int32_t>(i);
    Status status = decode_.call(context_);
    if (!status.ok()) {
      return Status::error(status.code(), "decode of prompt token %lld: %s",
                           static_cast<long long>(i), status.message());
    }
  }
  return Status();
}

StatusOr<GenerationStats> Generator::generate(const std::vector<int32_t>& prompt,
                                              const GenerationOptions& options,
                                              const TokenCallback& onToken) {
  TFC_RETURN_IF_ERROR(check(prompt));
  TFC_RETURN_IF_ERROR(checkGenerationOptions(options));
  const SamplingOptions& sampling = options.sampling;
  std::optional<int32_t> eos;
  if (tokenizer_ && options.stopAtEndOfText) eos = tokenizer_->eosId();

  GenerationStats stats;
  stats.promptTokens = static_cast<int64_t>(prompt.size());
  const Clock::time_point start = Clock::now();
  TFC_RETURN_IF_ERROR(prefillPrompt(prompt, &stats));
  stats.prefillMs = millisSince(start);
  const float* logits = chunk_ <= nCtx_ ? prefill_.output("logits").dataAs<float>()
                                        : decode_.output("logits").dataAs<float>();

  *sample_.input("temperature").mutableDataAs<float>() = static_cast<float>(sampling.temperature);
  *sample_.input("top_k").mutableDataAs<int32_t>() = sampling.topK;
  *sample_.input("top_p").mutableDataAs<float>() = static_cast<float>(sampling.topP);
  int64_t* seed = sample_.input("seed").mutableDataAs<int64_t>();
  float* sampleLogits = sample_.input("logits").mutableDataAs<float>();
  const size_t logitsBytes = static_cast<size_t>(batch_ * vocab_) * sizeof(float);
  const int32_t* sampled = sample_.output("ids").dataAs<int32_t>();
  int32_t* decodeToken = decode_.input("token").mutableDataAs<int32_t>();
  int32_t* decodePos = decode_.input("pos").mutableDataAs<int32_t>();

  // Every row of the batch gets row 0's token, so the rows stay identical.
  stats.stopReason = StopReason::kMaxNewTokens;
  for (int64_t step = 0;; ++step) {
    Clock::time_point t0 = Clock::now();
    std::memcpy(sampleLogits, logits, logitsBytes);
    *seed = sampling.seed + step;
    Status status = sample_.call(context_);
    if (!status.ok()) {
      return Status::error(status.code(), "sample at step %lld: %s", static_cast<long long>(step),
                           status.message());
    }
    stats.sampleMs += millisSince(t0);
    ++stats.sampleCalls;
    const int32_t id = sampled[0];
    if (id < 0 || id >= vocab_) {
      return Status::error(TFC_INTERNAL, "sample returned token %d, outside the vocabulary", id);
    }
    ++stats.generatedTokens;
    stats.lastToken = id;
    std::string bytes;
    if (tokenizer_ && !(eos && id == *eos) && id < tokenizer_->vocabSize()) {
      auto decoded = tokenizer_->decode(&id, 1);
      if (decoded.ok()) bytes = std::move(decoded).value();
    }
    if (onToken && !onToken(id, bytes)) {
      stats.stopReason = StopReason::kCallback;
      break;
    }
    if (eos && id == *eos) {
      stats.stopReason = StopReason::kEndOfText;
      break;
    }
    if (std::find(options.stopTokens.begin(), options.stopTokens.end(), id) !=
        options.stopTokens.end()) {
      stats.stopReason = StopReason::kStopToken;
      break;
    }
    if (step + 1 >= options.maxNewTokens) break;
    const int64_t pos = stats.promptTokens + step;  // where the new token goes in the cache
    if (pos >= nCtx_) {
      stats.stopReason = StopReason::kContextLimit;
      break;
    }
    t0 = Clock::now();
    for (int64_t b = 0; b < batch_; ++b) decodeToken[b] = id;
    *decodePos = static_cast<int32_t>(pos);
    status = decode_.call(context_);
    if (!status.ok()) {
      return Status::error(status.code(), "decode at position %lld: %s",
                           static_cast<long long>(pos), status.message());
    }
    stats.decodeMs += millisSince(t0);
    ++stats.decodeCalls;
    logits = decode_.output("logits").dataAs<float>();
  }
  stats.totalMs = millisSince(start);
  return stats;
}

StatusOr<GenerationStats> Generator::generateText(std::string_view prompt,
                                                  const GenerationOptions& options,
                                                  const TokenCallback& onToken) {
  if (!tokenizer_) {
    return Status::error(TFC_FAILED_PRECONDITION,
                         "a text prompt needs a tokenizer (Generator::setTokenizer)");
  }
  return generate(tokenizer_->encodePrompt(prompt), options, onToken);
}

}  // namespace tfc

// ------------------------------------------------------------------------------ C API

struct tfc_generator_s {
  tfc::Generator generator;
};

namespace tfc::internal {

tfc::GenerationOptions generationOptionsFromC(const tfc_generate_options_t& c) {
  tfc::GenerationOptions options;
  options.maxNewTokens = c.max_new_tokens;
  options.sampling.temperature = c.temperature;
  options.sampling.topK = c.top_k;
  options.sampling.topP = c.top_p;
  options.sampling.seed = c.seed;
  if (c.stop_tokens != nullptr) {
    options.stopTokens.assign(c.stop_tokens, c.stop_tokens + c.num_stop_tokens);
  }
  options.stopAtEndOfText = c.stop_at_end_of_text;
  return options;
}

}  // namespace tfc::internal

namespace {

void toC(const tfc::GenerationStats& stats, tfc_generate_stats_t* out) {
  out->prompt_tokens = stats.promptTokens;
  out->generated_tokens = stats.generatedTokens;
  out->prefill_calls = stats.prefillCalls;
  out->decode_calls = stats.decodeCalls;
  out->sample_calls = stats.sampleCalls;
  out->prefill_ms = stats.prefillMs;
  out->decode_ms = stats.decodeMs;
  out->sample_ms = stats.sampleMs;
  out->total_ms = stats.totalMs;
  out->prefill_tokens_per_second = stats.prefillTokensPerSecond();
  out->decode_tokens_per_second = stats.decodeTokensPerSecond();
  out->stop_reason = static_cast<tfc_stop_reason_t>(stats.stopReason);
  out->last_token = stats.lastToken;
}

tfc_status_t generateC(tfc_generator_t* generator, const std::vector<int32_t>* ids,
                       const char* text, size_t length, const tfc_generate_options_t* options,
                       tfc_token_callback_t callback, void* user_data,
                       tfc_generate_stats_t* out_stats) {
  if (generator == nullptr) {
    return tfc::Status::error(TFC_INVALID_ARGUMENT, "tfc_generator_generate: generator is NULL")
        .release();
  }
  tfc_generate_options_t defaults;
  tfc_generate_options_initialize(&defaults);
  tfc::GenerationOptions settings =
      tfc::internal::generationOptionsFromC(options ? *options : defaults);
  tfc::TokenCallback onToken;
  if (callback != nullptr) {
    onToken = [&](int32_t id, std::string_view bytes) {
      return callback(user_data, id, bytes.empty() ? nullptr : bytes.data(), bytes.size());
    };
  }
  auto stats =
      ids ? generator->generator.generate(*ids, settings, onToken)
          : generator->generator.generateText(std::string_view(text, length), settings, onToken);
  if (!stats.ok()) return std::move(stats).takeStatus().release();
  if (out_stats != nullptr) toC(*stats, out_stats);
  return nullptr;
}

}  // namespace

extern "C" {

void tfc_generator_options_initialize(tfc_generator_options_t* out_options) {
  out_options->tokenizer = nullptr;
}

void tfc_generate_options_initialize(tfc_generate_options_t* out_options) {
  tfc::GenerationOptions defaults;
  out_options->max_new_tokens = defaults.maxNewTokens;
  out_options->temperature = static_cast<float>(defaults.sampling.temperature);
  out_options->top_k = defaults.sampling.topK;
  out_options->top_p = static_cast<float>(defaults.sampling.topP);
  out_options->seed = defaults.sampling.seed;
  out_options->stop_tokens = nullptr;
  out_options->num_stop_tokens = 0;
  out_options->stop_at_end_of_text = defaults.stopAtEndOfText;
}

tfc_status_t tfc_generator_create(tfc_context_t* context, const tfc_generator_options_t* options,
                                  tfc_generator_t** out_generator) {
  if (context == nullptr || out_generator == nullptr) {
    return tfc::Status::error(TFC_INVALID_ARGUMENT,
                              "tfc_generator_create: context and out_generator must not be NULL")
        .release();
  }
  auto generator = tfc::internal::createGeneratorFromC<tfc::Generator>(context, options);
  if (!generator.ok()) return std::move(generator).takeStatus().release();
  *out_generator = new tfc_generator_s{std::move(generator).value()};
  return nullptr;
}

void tfc_generator_destroy(tfc_generator_t* generator) { delete generator; }

int64_t tfc_generator_batch(const tfc_generator_t* g) { return g->generator.batch(); }
int64_t tfc_generator_prefill_chunk(const tfc_generator_t* g) {
  return g->generator.prefillChunk();
}
int64_t tfc_generator_vocab_size(const tfc_generator_t* g) { return g->generator.vocabSize(); }
int64_t tfc_generator_context_length(const tfc_generator_t* g) {
  return g->generator.contextLength();
}

tfc_status_t tfc_generator_generate(tfc_generator_t* generator, const int32_t* prompt,
                                    size_t prompt_length, const tfc_generate_options_t* options,
                                    tfc_token_callback_t callback, void* user_data,
                                    tfc_generate_stats_t* out_stats) {
  std::vector<int32_t> ids;
  if (prompt != nullptr) ids.assign(prompt, prompt + prompt_length);
  return generateC(generator, &ids, nullptr, 0, options, callback, user_data, out_stats);
}

tfc_status_t tfc_generator_generate_text(tfc_generator_t* generator, const char* text,
                                         size_t length, const tfc_generate_options_t* options,
                                         tfc_token_callback_t callback, void* user_data,
                                         tfc_generate_stats_t* out_stats) {
  return generateC(generator, nullptr, text ? text : "", text ? length : 0, options, callback,
                   user_data, out_stats);
}

}  // extern "C"
