// tfc-run MODEL.so serve: an OpenAI-compatible HTTP server over one compiled model.
//
// HTTP threads (cpp-httplib) parse and check each request (serve/openai_api), encode its
// prompt and submit it to the engine (serve/engine), whose one thread runs the model's
// BatchedGenerator: up to G requests at once, each in its own row of the generation batch,
// queued ones admitted as rows free up. A response is written whole, or streamed as
// server-sent events as OpenAI sends them. SIGTERM or SIGINT stops admitting requests, lets
// the running ones finish (--drain-timeout) and exits 0.
#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "print.hpp"
#include "serve/chat_template.hpp"
#include "serve/engine.hpp"
#include "serve/openai_api.hpp"
#include "weights.hpp"
#include "tfc/runtime/batched_generator.hpp"
#include "tfc/runtime/metadata.hpp"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/tokenizer.hpp"

namespace tfc::run {
namespace {

using serve::ApiError;
using Clock = std::chrono::steady_clock;

std::atomic<bool> gStop{false};
void onStopSignal(int) { gStop = true; }

struct Options {
  std::string weights, tokenizer, host = "127.0.0.1", apiKey, modelName, chatTemplate;
  WeightsLoadOptions weightsOptions;  // --allow-unexpected
  int64_t port = 8080, maxQueued = 64, maxTokens = 0, threads = 0, maxBody = 1 << 20;
  int64_t prefillChunks = 2;
  double drainSeconds = 10;
  int32_t device = 0;
};

bool parseCount(const Args& args, const char* name, int64_t low, int64_t high, int64_t* out,
                std::string* error) {
  if (!args.has(name)) return true;
  if (!parseInt64(args.get(name), out) || *out < low || *out > high) {
    *error = std::string(name) + " '" + args.get(name) + "' must be an integer in [" +
             std::to_string(low) + ", " + std::to_string(high) + "]";
    return false;
  }
  return true;
}

// The chat template: --chat-template NAME, else the family of tokenizer_config.json's
// chat_template next to the tokenizer, else plain.
int chooseChatTemplate(const Options& options, serve::ChatTemplate* out, std::string* source) {
  if (!options.chatTemplate.empty()) {
    if (!serve::ChatTemplate::fromName(options.chatTemplate, out)) {
      return fail("--chat-template '" + options.chatTemplate +
                  "' is not one of plain, chatml, llama3, llama2, mistral, zephyr");
    }
    *source = "--chat-template";
    return 0;
  }
  // --tokenizer names a folder, or a tokenizer.json in the folder.
  std::string dir = options.tokenizer;
  if (dir.size() > 5 && dir.compare(dir.size() - 5, 5, ".json") == 0) {
    const size_t slash = dir.find_last_of('/');
    dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  }
  const std::string path = dir + "/tokenizer_config.json";
  std::ifstream in(path);
  *source = "no chat_template found";
  if (!in) return 0;
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json config = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (config.is_object() && config.contains("chat_template") &&
      config["chat_template"].is_string()) {
    *out = serve::ChatTemplate::fromJinja(config["chat_template"].get<std::string>());
    *source = path;
  }
  return 0;
}

void sendError(httplib::Response& res, const ApiError& error) {
  res.status = error.status;
  if (error.status == 503) res.set_header("Retry-After", "1");
  res.set_content(serve::errorJson(error), "application/json");
}

ApiError apiError(int status, std::string message, std::string param = "",
                  std::string type = "invalid_request_error") {
  ApiError error;
  error.status = status;
  error.message = std::move(message);
  error.param = std::move(param);
  error.type = std::move(type);
  return error;
}

int runServe(const Invocation& invocation) {
  const Args& args = invocation.args;
  Options options;
  std::string error;
  if (!args.positional.empty()) {
    return usageError(invocation.command, "unexpected argument '" + args.positional[0] + "'");
  }
  if (!args.has("--tokenizer")) {
    return usageError(invocation.command, "missing --tokenizer DIR: the API takes text");
  }
  options.tokenizer = args.get("--tokenizer");
  options.weights = args.get("--weights");
  options.weightsOptions = inferenceWeightsOptions(args);
  if (args.has("--host")) options.host = args.get("--host");
  options.apiKey = args.get("--api-key");
  options.modelName = args.get("--model-name");
  options.chatTemplate = args.get("--chat-template");
  if (!parseCount(args, "--port", 0, 65535, &options.port, &error) ||
      !parseCount(args, "--max-queue", 0, 1 << 20, &options.maxQueued, &error) ||
      !parseCount(args, "--max-tokens", 1, INT32_MAX, &options.maxTokens, &error) ||
      !parseCount(args, "--threads", 0, 4096, &options.threads, &error) ||
      !parseCount(args, "--max-body", 1, int64_t{1} << 30, &options.maxBody, &error) ||
      !parseCount(args, "--prefill-chunks", 1, 1024, &options.prefillChunks, &error)) {
    return usageError(invocation.command, error);
  }
  if (args.has("--drain-timeout") &&
      (!parseDouble(args.get("--drain-timeout"), &options.drainSeconds) ||
       !(options.drainSeconds >= 0) || options.drainSeconds > 3600)) {
    return usageError(invocation.command,
                      "--drain-timeout '" + args.get("--drain-timeout") + "' must be seconds in [0, 3600]");
  }
  if (std::string e = parseDevice(args, &options.device); !e.empty()) {
    return usageError(invocation.command, e);
  }

  auto loaded = Tokenizer::load(options.tokenizer);
  if (!loaded.ok()) return fail("--tokenizer " + options.tokenizer + ": " + loaded.status().message());
  std::shared_ptr<const Tokenizer> tokenizer = std::move(loaded).value();
  serve::ChatTemplate chatTemplate;
  std::string templateSource;
  if (int code = chooseChatTemplate(options, &chatTemplate, &templateSource)) return code;

  const Clock::time_point loadStart = Clock::now();
  auto artifact = Artifact::open(invocation.model);
  if (!artifact.ok()) return fail(artifact.status());
  if (artifact->paramCount() > 0 && options.weights.empty()) {
    return usageError(invocation.command, "missing --weights W.safetensors|DIR");
  }
  auto context = openInferenceContext(*artifact, options.weights, options.weightsOptions,
                                      options.threads, options.device);
  if (!context.ok()) return fail(context.status());
  auto generator = BatchedGenerator::create(*context);
  if (!generator.ok()) return fail(generator.status());
  generator->setPrefillChunksPerStep(options.prefillChunks);
  const double loadMs =
      std::chrono::duration<double, std::milli>(Clock::now() - loadStart).count();
  if (options.modelName.empty()) {
    std::string base = invocation.model.substr(invocation.model.find_last_of('/') + 1);
    options.modelName = base.size() > 3 && base.compare(base.size() - 3, 3, ".so") == 0
                            ? base.substr(0, base.size() - 3)
                            : base;
  }

  serve::EngineOptions engineOptions;
  engineOptions.maxQueued = options.maxQueued;
  if (const char* delay = std::getenv("TFC_SERVE_TEST_STEP_DELAY_MS")) {
    engineOptions.testStepDelay = std::chrono::milliseconds(std::atoi(delay));
  }
  serve::Engine engine(std::move(generator).value(), tokenizer, engineOptions);
  const int64_t nCtx = engine.contextLength();
  const int64_t maxTokens = options.maxTokens > 0 ? options.maxTokens : nCtx;

  httplib::Server server;
  // cpp-httplib serves a connection on one thread for as long as it is open: a request
  // holds it until its response ends, and an idle keep-alive connection until its timeout.
  // Threads for every row and every queued request twice over (the clients' idle pooled
  // connections beside their requests), and some for /health and /metrics; idle
  // connections are closed after 2 s.
  const size_t httpThreads = static_cast<size_t>(2 * (engine.rows() + options.maxQueued) + 16);
  server.new_task_queue = [httpThreads] { return new httplib::ThreadPool(httpThreads); };
  server.set_payload_max_length(static_cast<size_t>(options.maxBody));
  server.set_keep_alive_max_count(1000);
  server.set_keep_alive_timeout(2);

  auto authorized = [&](const httplib::Request& req, httplib::Response& res) {
    if (options.apiKey.empty() || req.get_header_value("Authorization") == "Bearer " + options.apiKey) {
      return true;
    }
    sendError(res, apiError(401, "a valid API key is required (Authorization: Bearer KEY)", "",
                            "authentication_error"));
    return false;
  };
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  std::mt19937_64 seeds(std::random_device{}());
  std::mutex seedsMutex;

  auto complete = [&](bool chat) {
    return [&, chat](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      serve::CompletionRequest request;
      ApiError parseError;
      if (!serve::parseCompletionRequest(req.body, chat, chatTemplate, &request, &parseError)) {
        return sendError(res, parseError);
      }
      std::vector<int32_t> prompt =
          request.ids ? *request.ids : tokenizer->encodePrompt(request.prompt);
      const int64_t promptTokens = static_cast<int64_t>(prompt.size());
      GenerationOptions generation;
      // OpenAI's defaults: 16 tokens for a completion; a chat reply runs to the context.
      generation.maxNewTokens =
          request.maxTokens.value_or(chat ? std::max<int64_t>(1, nCtx - promptTokens) : 16);
      if (generation.maxNewTokens > maxTokens) {
        return sendError(res, apiError(400, "max_tokens " + std::to_string(generation.maxNewTokens) +
                                                " is over this server's limit of " +
                                                std::to_string(maxTokens) + " (--max-tokens)",
                                       chat ? "max_completion_tokens" : "max_tokens"));
      }
      generation.sampling.temperature = request.temperature;
      generation.sampling.topP = request.topP;
      generation.sampling.topK = request.topK;
      generation.stopAtEndOfText = !request.ignoreEos;
      if (request.seed) {
        generation.sampling.seed = *request.seed;
      } else {
        std::lock_guard<std::mutex> lock(seedsMutex);
        generation.sampling.seed = static_cast<int64_t>(seeds() >> 1);
      }
      auto submitted = engine.submit(std::move(prompt), generation, request.stop);
      if (!submitted.ok()) {
        const bool busy = submitted.status().code() == TFC_FAILED_PRECONDITION;
        return sendError(res, apiError(busy ? 503 : 400, submitted.status().message(),
                                       busy ? "" : (chat ? "messages" : "prompt"),
                                       busy ? "server_busy" : "invalid_request_error"));
      }
      std::shared_ptr<serve::RequestChannel> channel = std::move(submitted).value();
      serve::ResponseId id{(chat ? "chatcmpl-" : "cmpl-") + std::to_string(channel->id()),
                           created, options.modelName};
      if (!request.stream) {
        std::string text = channel->waitAll();
        const serve::Outcome& outcome = channel->outcome();
        if (outcome.finishReason == "error") {
          return sendError(res, apiError(500, outcome.error, "", "server_error"));
        }
        res.set_content(serve::completionJson(request, id, text, outcome), "application/json");
        return;
      }
      auto first = std::make_shared<bool>(true);
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream",
          [channel, request, id, first](size_t, httplib::DataSink& sink) {
            auto send = [&](const std::string& json) {
              const std::string event = "data: " + json + "\n\n";
              return sink.write(event.data(), event.size());
            };
            std::vector<std::string> pieces;
            const bool done = channel->wait(std::chrono::milliseconds(50), &pieces);
            // A chat's first event carries the role, even before any text.
            if (pieces.empty() && *first && request.chat) pieces.emplace_back();
            for (const std::string& piece : pieces) {
              if (!send(serve::chunkJson(request, id, piece, "", *first))) {
                channel->abandon();
                return false;
              }
              *first = false;
            }
            if (!done) return true;
            const serve::Outcome& outcome = channel->outcome();
            bool ok = true;
            if (outcome.finishReason == "error") {
              ok = send(serve::errorJson(apiError(500, outcome.error, "", "server_error")));
            } else {
              ok = send(serve::chunkJson(request, id, "", outcome.finishReason, *first));
              if (ok && request.includeUsage) ok = send(serve::usageChunkJson(request, id, outcome));
            }
            const std::string end = "data: [DONE]\n\n";
            if (ok) ok = sink.write(end.data(), end.size());
            sink.done();
            return ok;
          },
          [channel](bool success) {
            if (!success) channel->abandon();  // the client went away: free its row
          });
    };
  };
  server.Post("/v1/completions", complete(false));
  server.Post("/v1/chat/completions", complete(true));
  server.Get("/v1/models", [&](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    nlohmann::json body = {
        {"object", "list"},
        {"data", nlohmann::json::array({{{"id", options.modelName},
                                         {"object", "model"},
                                         {"created", created},
                                         {"owned_by", "tfc"},
                                         {"max_model_len", nCtx}}})}};
    res.set_content(body.dump(), "application/json");
  });
  server.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
    res.status = engine.draining() ? 503 : 200;
    res.set_content(engine.draining() ? R"({"status":"shutting down"})" : R"({"status":"ok"})",
                    "application/json");
  });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(engine.metricsText(), "text/plain; version=0.0.4");
  });
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    // Routes that matched set their own bodies; these are httplib's own errors.
    if (!res.body.empty()) return;
    std::string message = res.status == 404   ? "no route " + req.method + " " + req.path
                          : res.status == 413 ? "the body is larger than --max-body"
                                              : "HTTP error " + std::to_string(res.status);
    res.set_content(serve::errorJson(apiError(res.status, message)), "application/json");
  });
  server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          what = x.what();
        } catch (...) {
        }
        sendError(res, apiError(500, "internal error: " + what, "", "server_error"));
      });

  // The Debian build of cpp-httplib listens with a backlog of 5: clients that connect at
  // once past it wait for a SYN retry (a second). The listening socket gets a real backlog
  // once bound (listen() again on a listening socket sets it anew).
  int listenSocket = -1;
  server.set_socket_options([&listenSocket](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listenSocket = sock;
  });
  int port = static_cast<int>(options.port);
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
  } else if (!server.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port < 0) {
    return fail("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                " (in use, or not an address of this machine)");
  }
  if (listenSocket >= 0) ::listen(listenSocket, 1024);
  std::signal(SIGTERM, onStopSignal);
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGPIPE, SIG_IGN);
  std::thread watcher([&] {
    while (!gStop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    print(stderr, "tfc-run serve: stopping: no new requests; the running ones get up to {:g} s\n",
          options.drainSeconds);
    engine.drain(options.drainSeconds);
    server.stop();
  });
  print(stderr,
        "tfc-run serve: {} ({} rows, n_ctx {}, loaded in {:.0f} ms), chat template {} ({}); "
        "listening on http://{}:{}\n",
        options.modelName, engine.rows(), nCtx, loadMs, chatTemplate.name(), templateSource,
        options.host, port);
  std::fflush(stderr);
  const bool listened = server.listen_after_bind();
  gStop = true;
  watcher.join();
  if (!listened) return fail("the server stopped with an error");
  print(stderr, "tfc-run serve: stopped\n");
  return 0;
}

}  // namespace

const Command kServeCommand = {
    "serve",
    "serve the model over HTTP with OpenAI's completions and chat completions API",
    R"(usage: tfc-run MODEL.so serve --weights W.safetensors|DIR --tokenizer DIR
                       [--host ADDR] [--port N] [--api-key KEY] [--max-queue N]
                       [--max-tokens N] [--chat-template NAME] [--model-name NAME]
                       [--threads N] [--device N] [--drain-timeout S] [--max-body BYTES]
                       [--prefill-chunks N]

Serves many clients at once from one copy of the model, with continuous batching: the
model must be traced with a generation batch G > 1 (tfc-trace ... --set gen_batch=8), and up
to G requests generate together, each in its own row; more wait in a queue (--max-queue)
and take a row as soon as one frees up. A client that disconnects frees its row at its next
token. Every request gets the tokens it would get alone.

Endpoints (OpenAI's API; the official clients work against http://HOST:PORT/v1):
  POST /v1/completions        prompt (a string or token ids), max_tokens (default 16),
                              temperature (default 1), top_p, top_k, stop (up to 4
                              strings), seed, stream, stream_options.include_usage, and
                              ignore_eos (run to max_tokens; as vLLM and llama.cpp take it)
  POST /v1/chat/completions   messages (system, user, assistant), the same sampling fields
                              and max_completion_tokens; the prompt is rendered with the
                              model's chat template (tokenizer_config.json's, recognised
                              by family: chatml, llama3, llama2, mistral, zephyr; plain
                              "role: text" lines without one)
  GET  /v1/models             the model
  GET  /health                {"status":"ok"}, 503 while shutting down
  GET  /metrics               Prometheus text: requests running, queued, finished and
                              refused; prompt and generated tokens; time to first token and
                              inter-token latency histograms
Streams are server-sent events ("data: {...}" then "data: [DONE]"), as OpenAI sends them.
Errors are OpenAI's {"error": {"message", "type", "param"}}: 400 for bad JSON, a field of
the wrong type or out of range, an unknown field or one tfc does not implement (n > 1,
logprobs, penalties, tools), naming it; 401 without the --api-key; 413 past --max-body; 503
with Retry-After when the queue is full or the server is stopping.

SIGTERM or SIGINT (Ctrl-C): new requests get 503, running and queued ones finish for up to
--drain-timeout seconds (then their streams end with finish_reason "abort"), and the
server exits 0.

options:
  --weights FILE|DIR     the parameters (as for generate)
  --allow-unexpected     ignore tensors of --weights that are not parameters of the model
  --tokenizer DIR        the model's tokenizer (as for generate); its folder's
                         tokenizer_config.json gives the chat template
  --host ADDR            the address to listen on (default 127.0.0.1: this machine only)
  --port N               the port (default 8080; 0: any free one, printed on stderr)
  --api-key KEY          require "Authorization: Bearer KEY" on /v1/ (default: none)
  --max-queue N          requests that may wait for a row (default 64); past it, 503
  --max-tokens N         the most tokens a request may ask for (default n_ctx)
  --chat-template NAME   plain, chatml, llama3, llama2, mistral or zephyr, instead of the
                         one recognised from tokenizer_config.json
  --model-name NAME      the model's id in responses and /v1/models (default: MODEL's
                         file name without .so)
  --threads N            threads for parallel kernels (default 0 = all cores)
  --device N             the GPU that runs a CUDA artifact (default 0)
  --drain-timeout S      seconds running requests get to finish at shutdown (default 10)
  --max-body BYTES       the largest request body (default 1048576)
  --prefill-chunks N     prompt chunks read per engine step, oldest request first
                         (default 2): more shortens the time to first token of a burst,
                         and lengthens the pauses between the tokens of the running
                         requests

examples:
  tfc-trace --hf gpt2/ --set gen_batch=8 -o gpt2-g8.mlir && tfc gpt2-g8.mlir -o gpt2-g8.so
  tfc-run gpt2-g8.so serve --weights gpt2/ --tokenizer gpt2/ --port 8080
  curl http://127.0.0.1:8080/v1/completions -H 'Content-Type: application/json' \
      -d '{"prompt": "Hello, my name is", "max_tokens": 32, "temperature": 0}'
)",
    true,
    {inputOption("--weights"),
     {"--allow-unexpected", nullptr, false, false},
     inputOption("--tokenizer"),
     {"--host", nullptr, true, false},
     {"--port", nullptr, true, false},
     {"--api-key", nullptr, true, false},
     {"--max-queue", nullptr, true, false},
     {"--max-tokens", nullptr, true, false},
     {"--chat-template", nullptr, true, false},
     {"--model-name", nullptr, true, false},
     {"--threads", "-j", true, false},
     {"--device", nullptr, true, false},
     {"--drain-timeout", nullptr, true, false},
     {"--max-body", nullptr, true, false},
     {"--prefill-chunks", nullptr, true, false}},
    runServe,
};

}  // namespace tfc::run
