// Context.generate() and Context.train(): the runtime's own loops (tfc::Generator,
// tfc::Trainer, as `tfc-run generate` and `tfc-run train` run them) with Python callbacks.
//
// The loops run with the GIL released and the context's and parameters' locks held; a
// callback takes the GIL for its own time only. A callback's exception never crosses the
// runtime's C++ code: it is kept, the loop is told to stop, and it is raised afterwards.
// Ctrl-C (checked after every token and step) stops generation, and stops training
// gracefully: the trainer finishes the step and writes its checkpoint, then
// KeyboardInterrupt is raised.
#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <pybind11/stl.h>

#include "model.hpp"
#include "tfc/runtime/batched_generator.hpp"
#include "tfc/runtime/generator.hpp"
#include "tfc/runtime/tokenizer.hpp"
#include "tfc/runtime/trainer.hpp"

namespace tfc::python {

namespace {

// Keeps the first Python exception raised in a callback (with the GIL held).
class PendingError {
 public:
  void keep(py::error_already_set& error) {
    if (!value_) value_ = error.value();
  }
  bool has() const { return static_cast<bool>(value_); }
  bool isKeyboardInterrupt() const {
    return value_ && PyErr_GivenExceptionMatches(value_.ptr(), PyExc_KeyboardInterrupt);
  }
  // Raises the kept exception, with its traceback, if any.
  void raiseIfAny() {
    if (!value_) return;
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(value_.ptr())), value_.ptr());
    value_ = py::object();
    throw py::error_already_set();
  }

 private:
  py::object value_;
};

// Calls |fn| (Python code, GIL held) and then checks for Ctrl-C; an exception from either
// is kept in |pending| and reported as false.
template <typename Fn>
bool runPython(PendingError& pending, Fn&& fn) {
  try {
    fn();
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    return true;
  } catch (py::error_already_set& error) {
    pending.keep(error);
    return false;
  }
}

// False only for a callback result that is False (None and anything else continue).
bool continues(const py::object& result) {
  return result.is_none() || !py::isinstance<py::bool_>(result) || result.cast<bool>();
}

const char* stopReasonKey(StopReason reason) {
  switch (reason) {
    case StopReason::kMaxNewTokens: return "max_new_tokens";
    case StopReason::kContextLimit: return "context_limit";
    case StopReason::kEndOfText: return "end_of_text";
    case StopReason::kStopToken: return "stop_token";
    case StopReason::kCallback: return "callback";
  }
  return "unknown";
}

py::dict statsDict(const GenerationStats& stats) {
  py::dict d;
  d["prompt_tokens"] = stats.promptTokens;
  d["generated_tokens"] = stats.generatedTokens;
  d["stop_reason"] = stopReasonKey(stats.stopReason);
  d["prefill_calls"] = stats.prefillCalls;
  d["decode_calls"] = stats.decodeCalls;
  d["prefill_ms"] = stats.prefillMs;
  d["decode_ms"] = stats.decodeMs;
  d["sample_ms"] = stats.sampleMs;
  d["total_ms"] = stats.totalMs;
  d["prefill_tokens_per_s"] = stats.prefillTokensPerSecond();
  d["decode_tokens_per_s"] = stats.decodeTokensPerSecond();
  return d;
}

// generate()'s and generate_batch()'s keywords as the runtime takes them.
GenerationOptions generationOptions(int64_t maxNewTokens, double temperature, int32_t topK,
                                    double topP, int64_t seed, std::vector<int32_t> stopTokens,
                                    bool stopAtEndOfText) {
  GenerationOptions options;
  options.maxNewTokens = maxNewTokens;
  options.sampling.temperature = temperature;
  options.sampling.topK = topK;
  options.sampling.topP = topP;
  options.sampling.seed = seed;
  options.stopTokens = std::move(stopTokens);
  options.stopAtEndOfText = stopAtEndOfText;
  return options;
}

py::object generate(PyContext& c, py::handle prompt, int64_t maxNewTokens, double temperature,
                    int32_t topK, double topP, int64_t seed,
                    std::shared_ptr<Tokenizer> tokenizer, std::vector<int32_t> stopTokens,
                    bool stopAtEndOfText, py::object onToken, bool returnStats) {
  const bool textPrompt = py::isinstance<py::str>(prompt) || py::isinstance<py::bytes>(prompt);
  std::vector<int32_t> ids;
  if (textPrompt) {
    if (!tokenizer) {
      throw py::value_error("generate: a text prompt needs a tokenizer "
                            "(tokenizer=tfc.Tokenizer.load(...)); or pass token ids");
    }
    std::string bytes = textBytes(prompt, "generate: prompt");
    py::gil_scoped_release release;
    ids = tokenizer->encodePrompt(bytes);  // BOS first, when the tokenizer has one
  } else {
    ids = tokenIds(prompt, "generate: prompt");
  }
  GenerationOptions options = generationOptions(maxNewTokens, temperature, topK, topP, seed,
                                                std::move(stopTokens), stopAtEndOfText);

  // Streamed text goes through an incremental UTF-8 decoder, so that a callback never sees
  // half a character (a token may end inside one).
  py::object decoder;
  if (!onToken.is_none() && tokenizer) {
    decoder = py::module_::import("codecs").attr("getincrementaldecoder")("utf-8")("replace");
  }
  std::vector<int32_t> generated;
  std::string generatedBytes;
  PendingError pending;
  TokenCallback callback = [&](int32_t id, std::string_view bytes) {
    generated.push_back(id);
    generatedBytes.append(bytes);
    py::gil_scoped_acquire gil;
    bool go = true;
    bool ok = runPython(pending, [&] {
      if (onToken.is_none()) return;
      py::object text = decoder ? decoder.attr("decode")(py::bytes(bytes.data(), bytes.size()))
                                : py::str("");
      go = continues(onToken(id, text));
    });
    return ok && go;
  };
  auto stats = withoutGil(
      [&]() -> StatusOr<GenerationStats> {
        TFC_ASSIGN_OR_RETURN(Generator generator, Generator::create(c.context));
        if (tokenizer) generator.setTokenizer(tokenizer);
        return generator.generate(ids, options, callback);
      },
      c.mutex, c.params->mutex);
  pending.raiseIfAny();
  if (!stats.ok()) throwStatus(stats.status());

  py::object result;
  if (textPrompt) {
    result = py::bytes(generatedBytes).attr("decode")("utf-8", "replace");
  } else {
    py::array_t<int32_t> array(static_cast<py::ssize_t>(generated.size()));
    std::copy(generated.begin(), generated.end(), array.mutable_data());
    result = array;
  }
  if (returnStats) return py::make_tuple(result, statsDict(*stats));
  return result;
}

// Many prompts at once through tfc::BatchedGenerator (continuous batching over the model's
// generation rows). Returns a list in the prompts' order: texts for text prompts, int32
// arrays for id prompts; with return_stats, (list, [stats dict a request]).
py::object generateBatch(PyContext& c, py::list prompts, int64_t maxNewTokens,
                         double temperature, int32_t topK, double topP, int64_t seed,
                         std::shared_ptr<Tokenizer> tokenizer, std::vector<int32_t> stopTokens,
                         bool stopAtEndOfText, py::object onToken, bool returnStats) {
  std::vector<std::vector<int32_t>> ids;
  std::vector<bool> text;
  for (size_t i = 0; i < prompts.size(); ++i) {
    py::handle prompt = prompts[i];
    const std::string what = "generate_batch: prompts[" + std::to_string(i) + "]";
    const bool isText = py::isinstance<py::str>(prompt) || py::isinstance<py::bytes>(prompt);
    if (isText && !tokenizer) {
      throw py::value_error(what + " is text: pass tokenizer=tfc.Tokenizer.load(...), or ids");
    }
    ids.push_back(isText ? tokenizer->encodePrompt(textBytes(prompt, what))
                         : tokenIds(prompt, what));
    text.push_back(isText);
  }
  GenerationOptions options = generationOptions(maxNewTokens, temperature, topK, topP, seed,
                                                std::move(stopTokens), stopAtEndOfText);
  std::vector<RequestResult> results(ids.size());
  std::vector<std::string> bytes(ids.size());
  PendingError pending;
  auto status = withoutGil(
      [&]() -> Status {
        TFC_ASSIGN_OR_RETURN(BatchedGenerator batch, BatchedGenerator::create(c.context));
        if (tokenizer) batch.setTokenizer(tokenizer);
        for (size_t i = 0; i < ids.size(); ++i) {
          TokenCallback callback = [&, i](int32_t id, std::string_view piece) {
            bytes[i].append(piece);
            if (onToken.is_none()) return true;
            py::gil_scoped_acquire gil;
            bool go = true;
            bool ok = runPython(pending, [&] {
              go = continues(onToken(i, id, py::bytes(piece.data(), piece.size())));
            });
            return ok && go;
          };
          auto submitted = batch.submit(ids[i], options, callback,
                                        [&, i](const RequestResult& r) { results[i] = r; });
          if (!submitted.ok()) {
            return Status::error(submitted.status().code(), "prompt %zu: %s", i,
                                 submitted.status().message());
          }
        }
        return batch.runUntilIdle();
      },
      c.mutex, c.params->mutex);
  pending.raiseIfAny();
  if (!status.ok()) throwStatus(status);
  py::list out, stats;
  for (size_t i = 0; i < results.size(); ++i) {
    const RequestResult& r = results[i];
    if (text[i]) {
      out.append(py::bytes(bytes[i]).attr("decode")("utf-8", "replace"));
    } else {
      py::array_t<int32_t> array(static_cast<py::ssize_t>(r.tokens.size()));
      std::copy(r.tokens.begin(), r.tokens.end(), array.mutable_data());
      out.append(array);
    }
    py::dict d;
    d["row"] = r.row;
    d["prompt_tokens"] = r.promptTokens;
    d["generated_tokens"] = r.generatedTokens;
    d["stop_reason"] = stopReasonKey(r.stopReason);
    d["queued_ms"] = r.queuedMs;
    d["first_token_ms"] = r.firstTokenMs;
    d["total_ms"] = r.totalMs;
    stats.append(d);
  }
  if (returnStats) return py::make_tuple(out, stats);
  return out;
}

py::object finiteOrNone(double value) {
  return std::isnan(value) ? py::object(py::none()) : py::object(py::float_(value));
}

py::dict rowDict(const TrainLogRow& row) {
  py::dict d;
  d["step"] = row.step;
  d["loss"] = row.loss;
  d["lr"] = finiteOrNone(row.lr);
  d["grad_norm"] = finiteOrNone(row.gradNorm);
  d["tokens_per_s"] = row.tokensPerSecond;
  d["eval_loss"] = finiteOrNone(row.evalLoss);
  return d;
}

int scheduleIndex(const std::string& name) {
  std::string names;
  for (int i = 0; i < 3; ++i) {
    if (name == scheduleName(i)) return i;
    names += (i ? ", " : "") + std::string(scheduleName(i));
  }
  throw py::value_error("train: schedule " + quote(name) + " is none of " + names);
}

TokenFileDtype tokenFileDtype(const std::string& name) {
  if (name == "uint16") return TokenFileDtype::kUint16;
  if (name == "uint32") return TokenFileDtype::kUint32;
  throw py::value_error("train: data_dtype " + quote(name) + " is neither uint16 nor uint32");
}

std::string optionalPath(const py::object& path, const char* what) {
  return path.is_none() ? std::string() : fsPath(path, what);
}

struct TrainArgs {
  TrainerOptions options;
  std::string resume;
  py::object onProgress;
};

py::dict train(PyContext& c, TrainArgs& args) {
  const TrainerOptions& options = args.options;
  PendingError pending;
  Trainer* running = nullptr;
  TrainProgressCallback callback = [&](const TrainProgress& progress) {
    py::gil_scoped_acquire gil;
    bool go = true;
    bool ok = runPython(pending, [&] {
      if (args.onProgress.is_none()) return;
      py::dict d = rowDict(progress.row);
      d["event"] = progress.event == TrainProgress::Event::kSaved ? "saved" : "step";
      d["last_step"] = progress.lastStep;
      d["smoothed_tokens_per_s"] = progress.smoothedTokensPerSecond;
      d["elapsed_s"] = progress.elapsedSeconds;
      d["eta_s"] = progress.etaSeconds;
      d["stopping"] = progress.stopping;
      d["diverged"] = progress.diverged;
      d["skipped"] = progress.skipped;  // f16 overflow: the update was skipped
      if (!progress.notice.empty()) d["notice"] = progress.notice;
      go = continues(args.onProgress(d));
    });
    if (!go || pending.isKeyboardInterrupt()) {
      running->requestStop();  // finish this step, save, return
      return Status();
    }
    return ok ? Status() : Status(TFC_FAILED_PRECONDITION, "stopped by an exception in on_progress");
  };
  struct Result {
    TrainOutcome outcome;
    std::vector<TrainLogRow> history;
    std::string checkpoint;
  };
  auto result = withoutGil(
      [&]() -> StatusOr<Result> {
        TFC_ASSIGN_OR_RETURN(Trainer trainer, Trainer::create(c.context, options));
        if (!args.resume.empty()) {
          auto resumed = trainer.resume(args.resume);
          if (!resumed.ok()) return std::move(resumed).takeStatus();
        }
        running = &trainer;
        TFC_ASSIGN_OR_RETURN(TrainOutcome outcome, trainer.run(callback));
        return Result{outcome, trainer.history(), trainer.lastCheckpoint()};
      },
      c.mutex, c.params->mutex);
  pending.raiseIfAny();
  if (!result.ok()) {
    throwStatus(result.status(), {options.dataPath, options.evalDataPath, args.resume});
  }
  py::dict d;
  d["first_step"] = result->outcome.firstStep;
  d["last_step"] = result->outcome.lastStep;
  d["stopped"] = result->outcome.stopped;
  d["seconds"] = result->outcome.seconds;
  d["checkpoint"] = result->checkpoint.empty() ? py::object(py::none())
                                               : py::object(py::str(result->checkpoint));
  py::list history;
  for (const TrainLogRow& row : result->history) history.append(rowDict(row));
  d["history"] = history;
  return d;
}

}  // namespace

void bindLoops(ContextClass& context) {
  const GenerationOptions generation;
  context.def(
      "generate", &generate, py::arg("prompt"), py::kw_only(),
      py::arg("max_new_tokens") = generation.maxNewTokens,
      py::arg("temperature") = generation.sampling.temperature,
      py::arg("top_k") = generation.sampling.topK, py::arg("top_p") = generation.sampling.topP,
      py::arg("seed") = generation.sampling.seed,
      py::arg("tokenizer") = py::none(),
      py::arg("stop_tokens") = std::vector<int32_t>(),
      py::arg("stop_at_eos") = generation.stopAtEndOfText, py::arg("on_token") = py::none(),
      py::arg("return_stats") = false,
      "generate(prompt, *, max_new_tokens=16, temperature=0.0, top_k=0, top_p=1.0, seed=0, "
      "tokenizer=None, stop_tokens=(), stop_at_eos=True, on_token=None, return_stats=False)\n\n"
      "Continues `prompt` with the model's prefill, decode and sample entries (as "
      "`tfc-run generate`). A text prompt (needs `tokenizer`) returns the generated text; "
      "token ids return the generated ids (int32 array). temperature 0 is greedy; step i "
      "samples with seed + i. Stops after max_new_tokens, at the model's context, at the "
      "tokenizer's end-of-text (stop_at_eos), at one of stop_tokens, or when on_token(id, "
      "text) returns False. return_stats=True returns (result, stats dict).");

  context.def(
      "generate_batch", &generateBatch, py::arg("prompts"), py::kw_only(),
      py::arg("max_new_tokens") = generation.maxNewTokens,
      py::arg("temperature") = generation.sampling.temperature,
      py::arg("top_k") = generation.sampling.topK, py::arg("top_p") = generation.sampling.topP,
      py::arg("seed") = generation.sampling.seed, py::arg("tokenizer") = py::none(),
      py::arg("stop_tokens") = std::vector<int32_t>(),
      py::arg("stop_at_eos") = generation.stopAtEndOfText, py::arg("on_token") = py::none(),
      py::arg("return_stats") = false,
      "generate_batch(prompts, *, max_new_tokens=16, temperature=0.0, top_k=0, top_p=1.0, "
      "seed=0, tokenizer=None, stop_tokens=(), stop_at_eos=True, on_token=None, "
      "return_stats=False)\n\n"
      "Generates a continuation of every prompt (texts with `tokenizer`, or token ids) with "
      "continuous batching, as `tfc-run generate --prompts` does: the model must be traced "
      "with a generation batch G > 1 (its decode_rows and prefill_row entries); up to G "
      "prompts run at once, each in its own row, and each gets the tokens generate() gives "
      "it alone. Returns a list in the prompts' order (texts, or int32 arrays). "
      "on_token(index, id, bytes) streams every token; False stops that prompt. "
      "return_stats=True returns (list, [per-prompt stats dict]).");

  const TrainerOptions trainer;
  const HyperParams hyper;
  context.def(
      "train",
      [](PyContext& c, py::object data, int64_t steps, py::object evalData, int64_t evalEvery,
         int64_t evalBatches, int64_t totalSteps, uint64_t seed, double lr, double minLr,
         double warmup, const std::string& schedule, double weightDecay, double gradClip,
         double beta1, double beta2, double eps, double momentum, py::object checkpoint,
         int64_t saveEvery, py::object log, py::object resume, const std::string& dataDtype,
         py::object onProgress) {
        TrainArgs args;
        TrainerOptions& o = args.options;
        o.dataPath = fsPath(data, "train: data");
        o.dataDtype = tokenFileDtype(dataDtype);
        o.evalDataPath = optionalPath(evalData, "train: eval_data");
        o.evalEvery = evalEvery;
        o.evalBatches = evalBatches;
        o.steps = steps;
        o.totalSteps = totalSteps;
        o.seed = seed;
        o.hyper.lr = lr;
        o.hyper.minLr = minLr;
        o.hyper.warmup = warmup;
        o.hyper.schedule = scheduleIndex(schedule);
        o.hyper.weightDecay = weightDecay;
        o.hyper.gradClip = gradClip;
        o.hyper.beta1 = beta1;
        o.hyper.beta2 = beta2;
        o.hyper.eps = eps;
        o.hyper.momentum = momentum;
        o.savePath = optionalPath(checkpoint, "train: checkpoint");
        o.saveEvery = saveEvery;
        o.logPath = optionalPath(log, "train: log");
        args.resume = optionalPath(resume, "train: resume");
        args.onProgress = onProgress;
        return train(c, args);
      },
      py::arg("data"), py::kw_only(), py::arg("steps"), py::arg("eval_data") = py::none(),
      py::arg("eval_every") = trainer.evalEvery, py::arg("eval_batches") = trainer.evalBatches,
      py::arg("total_steps") = trainer.totalSteps, py::arg("seed") = trainer.seed,
      py::arg("lr") = hyper.lr, py::arg("min_lr") = hyper.minLr,
      py::arg("warmup") = hyper.warmup, py::arg("schedule") = scheduleName(hyper.schedule),
      py::arg("weight_decay") = hyper.weightDecay, py::arg("grad_clip") = hyper.gradClip,
      py::arg("beta1") = hyper.beta1, py::arg("beta2") = hyper.beta2, py::arg("eps") = hyper.eps,
      py::arg("momentum") = hyper.momentum, py::arg("checkpoint") = py::none(),
      py::arg("save_every") = trainer.saveEvery, py::arg("log") = py::none(),
      py::arg("resume") = py::none(), py::arg("data_dtype") = "uint16",
      py::arg("on_progress") = py::none(),
      "train(data, *, steps, eval_data=None, eval_every=100, eval_batches=20, total_steps=0, "
      "seed=1337, lr=3e-4, min_lr=0.0, warmup=0.0, schedule='constant', weight_decay=0.1, "
      "grad_clip=1.0, beta1=0.9, beta2=0.95, eps=1e-8, momentum=0.9, checkpoint=None, "
      "save_every=0, log=None, resume=None, data_dtype='uint16', on_progress=None) -> dict\n\n"
      "Trains the parameters up to step `steps` with the model's train_step on batches drawn "
      "from the token file `data` (.npy of integers, llm.c .bin, or headerless data_dtype), "
      "as `tfc-run train` does: evaluation on eval_data, checkpoints (parameters, state, step "
      "and sampler position) to `checkpoint` at the end and every save_every steps, `resume` "
      "from one, a CSV log. on_progress(dict) is called after each step and each save; "
      "returning False stops after saving. Returns first_step, last_step, stopped, seconds, "
      "checkpoint and history (one dict per step).");
}

}  // namespace tfc::python
