// tfc-run MODEL.so generate: generate tokens with a compiled model in one process.
//
// Decoder-only models (gpt2, llama: entries prefill, decode and sample) run a chunked prefill
// of the prompt into the KV cache (the context's state), then one decode step per new token,
// each followed by the model's own sample entry. Encoder-decoder models (metadata model
// "encdec", entry forward(src, tgt_in)) generate greedily by re-running forward on the
// growing target, as the seed article does.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "print.hpp"
#include "weights.hpp"
#include "tfc/runtime/batched_generator.hpp"
#include "tfc/runtime/bound_entry.hpp"
#include "tfc/runtime/communicator.hpp"
#include "tfc/runtime/generator.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/tokenizer.hpp"

namespace tfc::run {
namespace {

using Clock = std::chrono::steady_clock;

double millisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// ------------------------------------------------------------------------------ entries
bool hasEntry(const Artifact& artifact, const char* name) {
  for (int32_t i = 0; i < artifact.entryCount(); ++i) {
    if (std::strcmp(artifact.entry(i).name, name) == 0) return true;
  }
  return false;
}

std::vector<std::string> entryNames(const Artifact& artifact) {
  std::vector<std::string> names;
  for (int32_t i = 0; i < artifact.entryCount(); ++i) names.push_back(artifact.entry(i).name);
  return names;
}

// ------------------------------------------------------------------------------ options
struct Options {
  const Command* command = nullptr;
  std::string weights;
  WeightsLoadOptions weightsOptions;  // --allow-unexpected, --mmap
  std::optional<std::string> promptTokens, promptText, tokenizerSpec;
  std::optional<std::string> promptsFile;  // --prompts: one request a line, batched
  std::vector<int32_t> stopTokens;
  std::optional<int64_t> maxNewTokens;
  double temperature = 0.0;
  int64_t topK = 0;
  double topP = 1.0;
  int64_t seed = 0;
  int32_t device = 0;
  int64_t threads = 0;
  int64_t warmup = 0;  // untimed runs before the timed one (their KV cache is reset after)
  bool quiet = false;
  // Tensor parallel (tfc --tp=M under mpirun): every rank generates the same tokens, rank 0
  // alone prints them.
  bool silent = false;
  bool samplingGiven = false;  // --temperature, --top-k or --top-p
};

// "1 2 3", "1,2,3" or "1, 2, 3" -> ids; false (with |error|) on anything else.
bool parseTokenList(const std::string& text, std::vector<int64_t>* out, std::string* error) {
  std::string item;
  auto flush = [&]() {
    if (item.empty()) return true;
    int64_t value = 0;
    if (!parseInt64(item, &value) || value < 0) {
      *error = "--prompt-tokens: '" + item + "' is not a token id (a non-negative integer)";
      return false;
    }
    out->push_back(value);
    item.clear();
    return true;
  };
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == ',') {
      if (!flush()) return false;
    } else {
      item += c;
    }
  }
  return flush();
}

// Parses and checks everything that needs no model; returns 0 or the usage error's code.
int parseOptions(const Invocation& invocation, Options* options) {
  const Command* command = invocation.command;
  const Args& args = invocation.args;
  options->command = command;
  if (!args.positional.empty()) {
    return usageError(command, "unexpected argument '" + args.positional[0] +
                                   "' (the prompt is given with --prompt-tokens or --prompt)");
  }
  if (int(args.has("--prompt-tokens")) + int(args.has("--prompt")) + int(args.has("--prompts")) >
      1) {
    return usageError(command, "give one of --prompt-tokens, --prompt and --prompts");
  }
  if (!args.has("--prompt-tokens") && !args.has("--prompt") && !args.has("--prompts")) {
    return usageError(command, "missing the prompt: --prompt-tokens \"1 2 3\", --prompt TEXT "
                               "--tokenizer DIR, or --prompts FILE (one prompt a line)");
  }
  if (args.has("--prompts")) options->promptsFile = args.get("--prompts");
  if (args.has("--prompt") && !args.has("--tokenizer")) {
    return usageError(command, "--prompt needs --tokenizer DIR (a folder with tokenizer.json, "
                               "or with vocab.json and merges.txt), or give token ids with "
                               "--prompt-tokens");
  }
  if (args.has("--prompt-tokens")) options->promptTokens = args.get("--prompt-tokens");
  if (args.has("--prompt")) options->promptText = args.get("--prompt");
  if (args.has("--tokenizer")) options->tokenizerSpec = args.get("--tokenizer");
  for (const std::string& text : args.all("--stop-token")) {
    int64_t id = 0;
    if (!parseInt64(text, &id) || id < 0 || id > INT32_MAX) {
      return usageError(command, "--stop-token '" + text + "' is not a token id (a non-negative "
                                 "integer)");
    }
    options->stopTokens.push_back(static_cast<int32_t>(id));
  }
  options->weights = args.get("--weights");
  options->weightsOptions = inferenceWeightsOptions(args);
  if (args.has("--max-new-tokens")) {
    int64_t n = 0;
    if (!parseInt64(args.get("--max-new-tokens"), &n) || n < 1 || n > (int64_t{1} << 30)) {
      return usageError(command, "--max-new-tokens '" + args.get("--max-new-tokens") +
                                     "' is not a positive integer");
    }
    options->maxNewTokens = n;
  }
  if (args.has("--temperature")) {
    if (!parseDouble(args.get("--temperature"), &options->temperature) ||
        options->temperature < 0) {
      return usageError(command, "--temperature '" + args.get("--temperature") +
                                     "' is not a number >= 0 (0 = greedy)");
    }
  }
  if (args.has("--top-k")) {
    if (!parseInt64(args.get("--top-k"), &options->topK) || options->topK < 0 ||
        options->topK > INT32_MAX) {
      return usageError(command, "--top-k '" + args.get("--top-k") +
                                     "' is not an integer >= 0 (0 = no top-k filter)");
    }
  }
  if (args.has("--top-p")) {
    if (!parseDouble(args.get("--top-p"), &options->topP) || !(options->topP > 0) ||
        options->topP > 1) {
      return usageError(command, "--top-p '" + args.get("--top-p") +
                                     "' is not a number in (0, 1] (1 = no top-p filter)");
    }
  }
  options->samplingGiven =
      args.has("--temperature") || args.has("--top-k") || args.has("--top-p");
  if (args.has("--seed")) {
    if (!parseInt64(args.get("--seed"), &options->seed) || options->seed < 0 ||
        options->seed > (int64_t{1} << 62)) {
      return usageError(command, "--seed '" + args.get("--seed") +
                                     "' is not a non-negative integer (below 2^62)");
    }
  }
  if (args.has("--threads") &&
      (!parseInt64(args.get("--threads"), &options->threads) || options->threads < 0 ||
       options->threads > TFC_CONTEXT_MAX_THREADS)) {
    return usageError(command, "--threads '" + args.get("--threads") +
                                   "' is not a thread count (0 = all cores; at most " +
                                   std::to_string(TFC_CONTEXT_MAX_THREADS) + ")");
  }
  if (std::string bad = parseDevice(args, &options->device); !bad.empty()) {
    return usageError(command, bad);
  }
  if (args.has("--warmup") &&
      (!parseInt64(args.get("--warmup"), &options->warmup) || options->warmup < 0 ||
       options->warmup > 100)) {
    return usageError(command, "--warmup '" + args.get("--warmup") +
                                   "' is not a count of untimed runs (0 to 100)");
  }
  options->quiet = args.has("--quiet");
  return 0;
}

// Checks the prompt's ids against the vocabulary; returns 0 or the failure's exit code.
int checkPrompt(const std::vector<int64_t>& ids, int64_t vocab, const std::string& what) {
  if (ids.empty()) return fail("the prompt is empty (" + what + " gave no tokens)");
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= vocab) {
      return fail("prompt token " + std::to_string(ids[i]) + " (at position " +
                  std::to_string(i) + ") is out of range: the model's vocabulary has " +
                  std::to_string(vocab) + " tokens (ids 0.." + std::to_string(vocab - 1) + ")");
    }
  }
  return 0;
}

// What generation prints as it goes: streamed text (with a tokenizer), then the ids.
class Printer {
 public:
  Printer(bool text, bool silent) : text_(text), silent_(silent) {}

  // Streams a token's bytes (none without a tokenizer) and keeps its id.
  void token(int32_t id, std::string_view bytes) {
    ids_.push_back(id);
    if (!text_ || bytes.empty() || silent_) return;
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    std::fflush(stdout);
  }

  // Ends the streamed text and prints the ids line (always the last line of stdout).
  void finish() {
    if (silent_) return;
    if (text_) std::fputc('\n', stdout);
    std::string line;
    for (size_t i = 0; i < ids_.size(); ++i) {
      if (i > 0) line += ' ';
      line += std::to_string(ids_[i]);
    }
    print("{}\n", line);
    std::fflush(stdout);
  }

  size_t count() const { return ids_.size(); }

 private:
  bool text_, silent_;
  std::vector<int32_t> ids_;
};

void printRate(const char* what, int64_t tokens, double ms, const char* unit) {
  if (tokens <= 0) {
    print(stderr, "tfc-run: {:<8} {:>6} {}\n", what, tokens, unit);
    return;
  }
  // Widths with an explicit '>': fmt 9 would left-align nan and inf, printf right-aligns them.
  print(stderr,
        "tfc-run: {:<8} {:>6} {} in {:>10.2f} ms ({:>8.3f} ms per token, {:>9.2f} tokens/s)\n",
        what, tokens, unit, ms, ms / static_cast<double>(tokens),
        ms > 0 ? 1000.0 * static_cast<double>(tokens) / ms : 0.0);
}

// ------------------------------------------------------------------------------ decoder-only
// The generation settings of the command line (--max-new-tokens given).
GenerationOptions generationOptions(const Options& options) {
  GenerationOptions settings;
  settings.maxNewTokens = *options.maxNewTokens;
  settings.sampling.temperature = options.temperature;
  settings.sampling.topK = static_cast<int32_t>(options.topK);
  settings.sampling.topP = options.topP;
  settings.sampling.seed = options.seed;
  settings.stopTokens = options.stopTokens;
  return settings;
}

std::string samplingText(const Options& options) {
  if (options.temperature <= 0) return "greedy";
  return fmt::format("temperature {:g}, top-k {}, top-p {:g}, seed {} (+ step)",
                     options.temperature, options.topK, options.topP, options.seed);
}

int generateDecoderOnly(const Options& options, Context& context,
                        const std::vector<int32_t>& prompt,
                        const std::shared_ptr<const Tokenizer>& tokenizer, double loadMs) {
  auto generator = Generator::create(context);
  if (!generator.ok()) return fail(generator.status());
  generator->setTokenizer(tokenizer);
  Status checked = generator->check(prompt);
  if (!checked.ok()) return fail(checked);
  if (!options.maxNewTokens) {
    return usageError(options.command, "missing --max-new-tokens N");
  }
  const int64_t vocab = generator->vocabSize(), nCtx = generator->contextLength();
  const int64_t chunk = generator->prefillChunk(), batch = generator->batch();
  const int64_t promptLen = static_cast<int64_t>(prompt.size());
  if (tokenizer != nullptr && tokenizer->vocabSize() != vocab && !options.quiet) {
    print(stderr, "tfc-run: note: the tokenizer has {} tokens, the model {}\n",
          tokenizer->vocabSize(), vocab);
  }
  if (!options.quiet) {
    print(stderr,
          "tfc-run: {}: prompt {} tokens, n_ctx {}, prefill chunk {}, batch {}{}, {} threads, "
          "{}\n",
          generator->modelName(), promptLen, nCtx, chunk, batch,
          batch > 1 ? " (every row the same prompt; row 0 reported)" : "", context.numThreads(),
          samplingText(options));
  }
  const GenerationOptions settings = generationOptions(options);
  // --warmup: whole untimed generations (first-call costs: the kernels' scratch buffers,
  // waking the threads, the weights' first pass through the caches), then the KV cache
  // back to its initial state, so that the timed run starts as a first one would.
  for (int64_t i = 0; i < options.warmup; ++i) {
    auto warm =
        generator->generate(prompt, settings, [](int32_t, std::string_view) { return true; });
    if (!warm.ok()) return fail(warm.status());
    if (Status reset = context.resetState(); !reset.ok()) return fail(reset);
  }
  if (options.warmup > 0 && !options.quiet) {
    print(stderr, "tfc-run: warm-up: {} untimed run{}, then the KV cache reset\n",
          options.warmup, options.warmup == 1 ? "" : "s");
  }
  Printer printer(tokenizer != nullptr, options.silent);
  auto stats = generator->generate(prompt, settings, [&](int32_t id, std::string_view bytes) {
    printer.token(id, bytes);
    return true;
  });
  if (!stats.ok()) return fail(stats.status());
  std::string stopReason;
  switch (stats->stopReason) {
    case StopReason::kEndOfText:
      stopReason = "end of text (token " + std::to_string(stats->lastToken) + ")";
      break;
    case StopReason::kStopToken:
      stopReason = "stop token " + std::to_string(stats->lastToken);
      break;
    case StopReason::kContextLimit:
      stopReason = "reached the context limit (n_ctx " + std::to_string(nCtx) + ") after " +
                   std::to_string(stats->generatedTokens) + " of " +
                   std::to_string(settings.maxNewTokens) + " new tokens";
      print(stderr, "\ntfc-run: stopped: {}\n", stopReason);
      break;
    default:
      stopReason = "reached --max-new-tokens " + std::to_string(settings.maxNewTokens);
  }
  printer.finish();
  if (!options.quiet) {
    print(stderr, "\ntfc-run: generated {} tokens ({})\n", printer.count(), stopReason);
    print(stderr, "tfc-run: load     {:>10.2f} ms (open, weights, context)\n", loadMs);
    printRate("prefill", promptLen, stats->prefillMs, "tokens");
    if (chunk <= nCtx) {
      print(stderr, "tfc-run:          ({} prefill call{} of {} tokens)\n", stats->prefillCalls,
            stats->prefillCalls == 1 ? "" : "s", chunk);
    }
    printRate("decode", stats->decodeCalls, stats->decodeMs, "tokens");
    print(stderr, "tfc-run: sample   {:>6} calls  in {:>10.2f} ms\n", printer.count(),
          stats->sampleMs);
    print(stderr, "tfc-run: total    {:>10.2f} ms ({:.2f} new tokens/s end to end)\n",
          stats->totalMs,
          stats->totalMs > 0 ? 1000.0 * static_cast<double>(printer.count()) / stats->totalMs
                             : 0.0);
  }
  return 0;
}

// ------------------------------------------------------------------------------ batched
// --prompts FILE: every line a request, all submitted at once to a BatchedGenerator, which
// runs as many as the model has generation rows and admits the next as one ends.
int generateBatched(const Options& options, Context& context,
                    const std::vector<std::vector<int32_t>>& prompts,
                    const std::shared_ptr<const Tokenizer>& tokenizer, double loadMs) {
  auto batch = BatchedGenerator::create(context);
  if (!batch.ok()) return fail(batch.status());
  batch->setTokenizer(tokenizer);
  if (!options.maxNewTokens) return usageError(options.command, "missing --max-new-tokens N");
  const GenerationOptions settings = generationOptions(options);
  if (!options.quiet) {
    print(stderr,
          "tfc-run: {} requests over {} rows (continuous batching), n_ctx {}, prefill chunk {}, "
          "{} threads, {}\n",
          prompts.size(), batch->rows(), batch->contextLength(), batch->prefillChunk(),
          context.numThreads(), samplingText(options));
  }
  std::vector<RequestResult> results(prompts.size());
  const Clock::time_point start = Clock::now();
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto id = batch->submit(prompts[i], settings, {},
                            [&results, i](const RequestResult& done) { results[i] = done; });
    if (!id.ok()) {
      return fail(*options.promptsFile + ": prompt " + std::to_string(i + 1) + ": " +
                  id.status().message());
    }
  }
  Status status = batch->runUntilIdle();
  if (!status.ok()) return fail(status);
  const double ms = millisSince(start);

  // stdout: one JSON object a request, in the order of the file.
  int64_t generated = 0;
  std::vector<double> firstTokenMs;
  for (size_t i = 0; i < results.size(); ++i) {
    const RequestResult& r = results[i];
    generated += r.generatedTokens;
    firstTokenMs.push_back(r.firstTokenMs);
    if (options.silent) continue;
    std::string ids;
    for (size_t t = 0; t < r.tokens.size(); ++t) {
      ids += (t ? ", " : "") + std::to_string(r.tokens[t]);
    }
    std::string text;
    if (tokenizer) {
      std::vector<int32_t> shown;
      for (int32_t id : r.tokens) {
        if (id != tokenizer->eosId() && id < tokenizer->vocabSize()) shown.push_back(id);
      }
      auto decoded = tokenizer->decode(shown.data(), shown.size());
      if (decoded.ok()) text = ", \"text\": " + jsonString(*decoded);
    }
    print("{{\"request\": {}, \"row\": {}, \"prompt_tokens\": {}, \"tokens\": [{}]{}, "
          "\"stop\": {}, \"queued_ms\": {:.2f}, \"first_token_ms\": {:.2f}, "
          "\"total_ms\": {:.2f}}}\n",
          i + 1, r.row, r.promptTokens, ids, text, jsonString(stopReasonName(r.stopReason)),
          r.queuedMs, r.firstTokenMs, r.totalMs);
  }
  std::fflush(stdout);
  if (!options.quiet) {
    BatchedGenerator::Counters c = batch->counters();
    std::sort(firstTokenMs.begin(), firstTokenMs.end());
    print(stderr, "\ntfc-run: {} requests, {} new tokens in {:.2f} ms ({:.2f} new tokens/s)\n",
          results.size(), generated, ms, ms > 0 ? 1000.0 * generated / ms : 0.0);
    print(stderr, "tfc-run: load     {:>10.2f} ms (open, weights, context)\n", loadMs);
    print(stderr, "tfc-run: steps {}: {} prefill calls in {:.2f} ms, {} decode calls ({} row "
                  "tokens, {:.2f} a call) in {:.2f} ms, {} sample calls in {:.2f} ms\n",
          c.steps, c.prefillCalls, c.prefillMs, c.decodeCalls, c.decodedTokens,
          c.decodeCalls ? static_cast<double>(c.decodedTokens) / c.decodeCalls : 0.0,
          c.decodeMs, c.sampleCalls, c.sampleMs);
    if (!firstTokenMs.empty()) {
      print(stderr, "tfc-run: time to first token: median {:.2f} ms, max {:.2f} ms\n",
            firstTokenMs[firstTokenMs.size() / 2], firstTokenMs.back());
    }
    if (BatchedGenerator::KvBlocks kv = batch->kvBlocks(); kv.total > 0) {
      print(stderr, "tfc-run: paged KV cache: {} blocks of {} positions; {} prompt tokens "
                    "reused from cached prefixes; {} preemptions\n",
            kv.total, kv.blockSize, c.prefixReusedTokens, c.preemptions);
    }
  }
  return 0;
}

// Reads --prompts: one prompt a line (text with a tokenizer, else token ids); blank lines
// are skipped. Returns 0 or the failure's exit code.
int readPrompts(const Options& options, const Tokenizer* tokenizer,
                std::vector<std::vector<int32_t>>* out) {
  const std::string& path = *options.promptsFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("--prompts " + path + ": cannot open: " + std::strerror(errno));
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::vector<int32_t> prompt;
    if (tokenizer) {
      prompt = tokenizer->encodePrompt(line);
    } else {
      std::vector<int64_t> ids;
      std::string error;
      if (!parseTokenList(line, &ids, &error)) {
        return fail("--prompts " + path + ": line " + std::to_string(number) + ": " +
                    error.substr(error.find(':') + 2) + " (without --tokenizer a line holds "
                    "token ids)");
      }
      for (int64_t id : ids) prompt.push_back(static_cast<int32_t>(std::min<int64_t>(id, INT32_MAX)));
    }
    out->push_back(std::move(prompt));
  }
  if (in.bad()) return fail("--prompts " + path + ": read error");
  if (out->empty()) return fail("--prompts " + path + ": no prompts (every line is blank)");
  return 0;
}

// ------------------------------------------------------------------------------ encdec
int generateEncDec(const Options& options, const Artifact& artifact, Context& context,
                   const std::vector<int64_t>& source, double loadMs) {
  if (options.temperature > 0 || options.topK != 0 || options.topP != 1.0) {
    return fail("encdec generation is greedy: --temperature must be 0, with no --top-k or "
                "--top-p");
  }
  auto forward = BoundEntry::create(artifact, "forward",
                                    {{"src", TFC_DTYPE_I32, 2}, {"tgt_in", TFC_DTYPE_I32, 2}},
                                    {{"logits", TFC_DTYPE_F32, 3}}, "generate");
  if (!forward.ok()) return fail(forward.status());
  const std::vector<int64_t>& srcShape = forward->input("src").shape();
  const std::vector<int64_t>& tgtShape = forward->input("tgt_in").shape();
  const std::vector<int64_t>& logitsShape = forward->output("logits").shape();
  const int64_t batch = srcShape[0], srcLen = srcShape[1], tgtLen = tgtShape[1];
  const int64_t vocab = logitsShape[2];
  if (tgtShape[0] != batch || logitsShape[0] != batch || logitsShape[1] != tgtLen) {
    return fail("entry forward has inconsistent shapes: " +
                forward->signature());
  }
  if (vocab < 3 || tgtLen < 2) {
    return fail("entry forward cannot generate: " + forward->signature() +
                " (needs a vocabulary with Start and Finish and a target of >= 2 tokens)");
  }
  if (int code = checkPrompt(source, vocab, "--prompt-tokens")) return code;
  if (static_cast<int64_t>(source.size()) != srcLen) {
    return fail("the encoder takes exactly " + std::to_string(srcLen) + " source tokens (src_len); "
                "--prompt-tokens gave " + std::to_string(source.size()));
  }
  int64_t steps = tgtLen - 1;
  if (options.maxNewTokens) {
    if (*options.maxNewTokens > steps) {
      return fail("--max-new-tokens " + std::to_string(*options.maxNewTokens) + " is more than "
                  "the decoder's " + std::to_string(steps) + " (tgt_len - 1)");
    }
    steps = *options.maxNewTokens;
  }
  const int32_t startToken = static_cast<int32_t>(vocab - 2);
  if (!options.quiet) {
    print(stderr,
          "tfc-run: encdec: {} source tokens, {} target tokens from Start = {}, batch {}{}, {} "
          "threads, greedy\n",
          srcLen, steps, startToken, batch,
          batch > 1 ? " (every row the same source; row 0 reported)" : "", context.numThreads());
  }
  int32_t* src = forward->input("src").mutableDataAs<int32_t>();
  int32_t* tgt = forward->input("tgt_in").mutableDataAs<int32_t>();
  const float* logits = forward->output("logits").dataAs<float>();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < srcLen; ++s) src[b * srcLen + s] = static_cast<int32_t>(source[s]);
    for (int64_t t = 0; t < tgtLen; ++t) tgt[b * tgtLen + t] = t == 0 ? startToken : 0;
  }
  // tgt_in = [Start, 0, ...]; step t reads the logits of position t (which see only
  // positions <= t: the zeros after it do not matter) and writes the argmax to t + 1.
  Printer printer(false, options.silent);
  for (int64_t i = 0; i < options.warmup; ++i) {  // untimed runs (forward has no state)
    Status status = forward->call(context);
    if (!status.ok()) return fail(std::string("forward (warm-up): ") + status.message());
  }
  Clock::time_point start = Clock::now();
  for (int64_t t = 0; t < steps; ++t) {
    Status status = forward->call(context);
    if (!status.ok()) return fail("forward at step " + std::to_string(t) + ": " +
                                  status.message());
    const float* row = logits + t * vocab;  // batch row 0, position t
    int32_t best = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
    for (int64_t b = 0; b < batch; ++b) tgt[b * tgtLen + t + 1] = best;
    printer.token(best, {});
  }
  const double ms = millisSince(start);
  printer.finish();
  if (!options.quiet) {
    print(stderr, "tfc-run: load     {:>10.2f} ms (open, weights, context)\n", loadMs);
    printRate("forward", steps, ms, "tokens");
  }
  return 0;
}

// ------------------------------------------------------------------------------ command
int runGenerate(const Invocation& invocation) {
  Options options;
  if (int code = parseOptions(invocation, &options)) return code;

  // The tokenizer first: a bad folder is reported before the model is loaded.
  std::shared_ptr<const Tokenizer> tokenizer;
  if (options.tokenizerSpec) {
    auto loaded = Tokenizer::load(*options.tokenizerSpec);
    if (!loaded.ok()) {
      return fail("--tokenizer " + *options.tokenizerSpec + ": " + loaded.status().message());
    }
    tokenizer = std::move(loaded).value();
  }
  std::vector<std::vector<int32_t>> prompts;  // --prompts
  if (options.promptsFile) {
    if (int code = readPrompts(options, tokenizer.get(), &prompts)) return code;
  }
  std::vector<int64_t> prompt;  // one prompt (the batched generator checks --prompts')
  if (options.promptTokens) {
    std::string error;
    if (!parseTokenList(*options.promptTokens, &prompt, &error)) {
      return usageError(invocation.command, error);
    }
  } else if (options.promptText) {
    // The tokenizer's BOS token first (LLaMA's <s>), as the model saw texts in training.
    for (int32_t id : tokenizer->encodePrompt(*options.promptText)) prompt.push_back(id);
  }
  if (prompt.empty() && !options.promptsFile) {
    return fail(std::string("the prompt is empty (") +
                (options.promptText ? "--prompt encodes to" : "--prompt-tokens gave") +
                " no tokens)");
  }

  Clock::time_point loadStart = Clock::now();
  auto artifact = Artifact::open(invocation.model);
  if (!artifact.ok()) return fail(artifact.status());
  std::string metadata(artifact->metadataJson());
  bool encdec = metadataValue(metadata, "model").value_or("") == "encdec";
  // (A paged KV cache's model has only the serving entries prefill_row and decode_rows.)
  bool decoderOnly =
      ((hasEntry(*artifact, "prefill") && hasEntry(*artifact, "decode")) ||
       (hasEntry(*artifact, "prefill_row") && hasEntry(*artifact, "decode_rows"))) &&
      hasEntry(*artifact, "sample");
  if (!encdec && !decoderOnly) {
    std::vector<std::string> missing;
    for (const char* name : {"prefill", "decode", "sample"}) {
      if (!hasEntry(*artifact, name)) missing.push_back(name);
    }
    return fail(invocation.model + " cannot generate: it has no " + join(missing) +
                " entr" + (missing.size() == 1 ? "y" : "ies") + " (its entries: " +
                join(entryNames(*artifact)) + ") and is not an encoder-decoder (metadata model "
                "'encdec' with forward(src, tgt_in)); trace gpt2 or llama (which have prefill, "
                "decode and sample) or encdec");
  }
  if (encdec && !hasEntry(*artifact, "forward")) {
    return fail(invocation.model + ": an encdec model without a forward entry (its entries: " +
                join(entryNames(*artifact)) + ")");
  }
  if (encdec && (options.promptText || tokenizer)) {
    return usageError(invocation.command, "encdec generation takes digits: --prompt-tokens "
                                          "with the source tokens, no --prompt or --tokenizer");
  }
  if (artifact->paramCount() > 0 && options.weights.empty()) {
    return usageError(invocation.command, "missing --weights W.safetensors (write initial "
                                          "weights with: tfc-run " + invocation.model +
                                          " init -o W.safetensors)");
  }

  auto context = openInferenceContext(*artifact, options.weights, options.weightsOptions,
                                      options.threads, options.device);
  if (!context.ok()) return fail(context.status());
  const double loadMs = millisSince(loadStart);
  if (metadataInt(metadata, TFC_METADATA_WORLD_SIZE).value_or(1) > 1) {
    auto world = worldCommunicator();
    if (!world.ok()) return fail(world.status());
    if ((*world)->rank() != 0) options.silent = options.quiet = true;
  }

  if (encdec && options.promptsFile) {
    return usageError(invocation.command, "--prompts needs a decoder-only model (gpt2, llama)");
  }
  if (encdec) return generateEncDec(options, *artifact, *context, prompt, loadMs);
  if (options.promptsFile) return generateBatched(options, *context, prompts, tokenizer, loadMs);
  // Ids beyond int32 cannot be in any vocabulary; saturate them so the range check names them.
  std::vector<int32_t> ids;
  for (int64_t id : prompt) ids.push_back(static_cast<int32_t>(std::min<int64_t>(id, INT32_MAX)));
  return generateDecoderOnly(options, *context, ids, tokenizer, loadMs);
}

}  // namespace

const Command kGenerateCommand = {
    "generate",
    "generate tokens: prefill the prompt into the KV cache, then decode and sample",
    R"(usage: tfc-run MODEL.so generate --weights W.safetensors|DIR
                          (--prompt-tokens "1 2 3" | --prompt TEXT --tokenizer DIR |
                           --prompts FILE [--tokenizer DIR])
                          --max-new-tokens N [--temperature T] [--top-k K] [--top-p P]
                          [--seed S] [--stop-token ID]... [--threads N] [--device N]
                          [--warmup N] [--quiet]

Generates a continuation of the prompt in one process, keeping the KV cache in the
context's state between calls.

Decoder-only models (gpt2, llama: entries prefill, decode and sample): the prompt runs
through prefill in chunks of the entry's length P (the last chunk padded with 0s), then each
new token comes from the model's sample entry and goes through decode at the next position.
Step i samples with seed S + i, so the same seed gives the same tokens (at any --threads).
Generation stops after N new tokens, at the model's context (n_ctx; said on stderr), or at
the tokenizer's end-of-text token (<|endoftext|>, </s>, ...) when one is given, or at any --stop-token. When the model was compiled with a
batch B > 1, every row runs the same prompt and row 0 is reported.

Many prompts at once (--prompts FILE, one prompt a line: text with --tokenizer, else token
ids): a model traced with a generation batch G > 1 (tfc-trace --set gen_batch=G) runs them
with continuous batching, each row its own sequence at its own position: up to G requests
at a time, the next admitted as soon as one ends, new prompts prefilled chunk by chunk
between decode steps of the others. Each request gets the tokens it would get alone (and
the same as --prompt-tokens gives). stdout: a JSON object a line per request, in the
file's order: {"request", "row", "prompt_tokens", "tokens", "text" (with a tokenizer),
"stop", "queued_ms", "first_token_ms", "total_ms"}; stderr: throughput and call counts.

Encoder-decoder models (encdec): --prompt-tokens gives the S source digits; the decoder
starts from Start (vocab - 2) and runs forward tgt_len - 1 times, each time taking the argmax
at the next position (greedy only; --max-new-tokens may ask for fewer steps).

stdout: with a tokenizer, the generated text streamed as tokens arrive (the prompt is not
echoed; <|endoftext|> is not printed) and a newline; then, always as the last line, the
generated token ids separated by spaces (an <|endoftext|> that stopped generation included).
stderr: the settings, and after the run the prefill and decode speeds (wall clock; loading
the model and weights is timed apart), as llama.cpp prints them.

options:
  --weights FILE|DIR     parameters from a .safetensors file (tfc-run MODEL.so init makes one),
                         a training checkpoint of this model (its state is ignored), or a
                         Hugging Face checkpoint directory (model.safetensors, or shards
                         under model.safetensors.index.json), converted to the model's
                         dtype; see `tfc-run help call`
  --allow-unexpected     ignore tensors of --weights that are not parameters of the model
  --mmap                 map --weights copy-on-write instead of copying them into this
                         process's memory (huge pages): processes loading one file share
                         its pages, at a slower decode
  --prompt-tokens IDS    the prompt as token ids, separated by spaces or commas
  --prompt TEXT          the prompt as text, encoded with --tokenizer
  --prompts FILE         many prompts, one a line (blank lines skipped), generated together
                         with continuous batching (a model with gen_batch > 1)
  --tokenizer DIR        a Hugging Face tokenizer.json or its folder (BPE: GPT-2, LLaMA 2
                         and 3, Mistral, Qwen2), a GPT-2 BPE tokenizer (DIR/vocab.json,
                         DIR/merges.txt), or `bytes` (token i is byte i): encodes --prompt
                         (after the tokenizer's BOS token, e.g. LLaMA's <s>, when its
                         post-processor puts one first), decodes the output, stops at its
                         end-of-text token (<|endoftext|>, </s>, ...; tokenizer_config.json's
                         eos_token when the folder has one)
  --max-new-tokens N     how many tokens to generate at most (required for decoder-only models)
  --temperature T        0 (default): greedy; > 0: sample from softmax(logits / T)
  --top-k K              sample among the K most likely tokens only (default 0 = all)
  --top-p P              sample among the most likely tokens whose mass reaches P (default 1)
  --seed S               sampling seed, a non-negative integer (default 0)
  --stop-token ID        stop after this token id (printed); repeatable
  --threads N            threads for parallel kernels (default 0 = all cores)
  --device N             the GPU that runs a CUDA artifact (default 0)
  --warmup N             first N untimed generations of the same prompt, the KV cache reset
                         after them (default 0): the speeds printed are then those of a warm
                         process, as llama-bench's (which warms up by default)
  --quiet                print no settings or statistics on stderr (errors and a stop at
                         the context limit still are)

examples:
  tfc-run gpt2.so init -o w.safetensors
  tfc-run gpt2.so generate --weights w.safetensors --prompt-tokens "1 2 3" --max-new-tokens 32
  tfc-run gpt2-124m.so generate --weights gpt2.safetensors --tokenizer gpt2/ \
      --prompt "Hello, my name is" --max-new-tokens 40 --temperature 0.8 --top-k 40 --seed 1
  tfc-run encdec.so generate --weights w.safetensors \
      --prompt-tokens "3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3"
  # 8 requests at a time: tfc-trace gpt2 --set gen_batch=8 ...; prompts.txt one a line
  tfc-run gpt2-g8.so generate --weights w.safetensors --tokenizer gpt2/ \
      --prompts prompts.txt --max-new-tokens 64
  # tensor parallel (tfc --tp=2): each rank its heads and KV-cache slice, rank 0 prints
  mpirun -np 2 tfc-run gpt2-tp2.so generate --weights w.safetensors --prompt-tokens "1 2 3"
)",
    true,
    {inputOption("--weights"),
     {"--allow-unexpected", nullptr, false, false},
     {"--mmap", nullptr, false, false},
     {"--prompt-tokens", nullptr, true, false},
     {"--prompt", "-p", true, false},
     inputOption("--prompts"),
     inputOption("--tokenizer"),
     {"--max-new-tokens", "-n", true, false},
     {"--temperature", nullptr, true, false},
     {"--top-k", nullptr, true, false},
     {"--top-p", nullptr, true, false},
     {"--seed", nullptr, true, false},
     {"--stop-token", nullptr, true, true},
     {"--threads", "-j", true, false},
     {"--device", nullptr, true, false},
     {"--warmup", nullptr, true, false},
     {"--quiet", "-q", false, false}},
    runGenerate,
};

}  // namespace tfc::run
