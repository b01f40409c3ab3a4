#include "serve/openai_api.hpp"

#include <nlohmann/json.hpp>

#include <set>

namespace tfc::serve {
namespace {

using nlohmann::json;

// JSON text; bytes that are not UTF-8 (a text cut inside a character) become U+FFFD.
std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The checks of one request body, each setting |error| on failure.
class Fields {
 public:
  Fields(const json& body, ApiError* error) : body_(body), error_(error) {}

  bool fail(const std::string& field, const std::string& message) {
    error_->message = message;
    error_->param = field;
    return false;
  }
  const json* get(const char* field) const {
    auto it = body_.find(field);
    return it == body_.end() || it->is_null() ? nullptr : &*it;
  }
  bool integer(const char* field, int64_t low, int64_t high, std::optional<int64_t>* out) {
    const json* v = get(field);
    if (!v) return true;
    if (!v->is_number_integer()) return fail(field, std::string("'") + field + "' must be an integer");
    const int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)
                          ? INT64_MAX
                          : v->get<int64_t>();
    if (x < low || x > high) {
      return fail(field, std::string("'") + field + "' is " + std::to_string(x) + "; it must be in [" +
                             std::to_string(low) + ", " + std::to_string(high) + "]");
    }
    *out = x;
    return true;
  }
  bool number(const char* field, double low, double high, bool openLow, double* out) {
    const json* v = get(field);
    if (!v) return true;
    if (!v->is_number()) return fail(field, std::string("'") + field + "' must be a number");
    const double x = v->get<double>();
    if (!(openLow ? x > low : x >= low) || !(x <= high)) {
      return fail(field, std::string("'") + field + "' is " + dump(*v) + "; it must be in " +
                             (openLow ? "(" : "[") + dump(low) + ", " + dump(high) + "]");
    }
    *out = x;
    return true;
  }
  bool boolean(const char* field, bool* out) {
    const json* v = get(field);
    if (!v) return true;
    if (!v->is_boolean()) return fail(field, std::string("'") + field + "' must be true or false");
    *out = v->get<bool>();
    return true;
  }
  // A field tfc takes only at its default (OpenAI's): anything else is refused by name.
  bool onlyDefault(const char* field, const json& allowed, const char* what) {
    const json* v = get(field);
    if (!v || *v == allowed || (allowed.is_number() && v->is_number() && *v == allowed)) {
      return true;
    }
    if (allowed.is_object() && v->is_object() && v->empty()) return true;
    return fail(field, std::string("'") + field + "' is not supported by tfc (" + what + ")");
  }

 private:
  const json& body_;
  ApiError* error_;
};

bool parseStop(Fields& f, const json* stop, std::vector<std::string>* out) {
  if (!stop) return true;
  if (stop->is_string()) {
    out->push_back(stop->get<std::string>());
  } else if (stop->is_array() && stop->size() <= 4) {
    for (const json& s : *stop) {
      if (!s.is_string()) return f.fail("stop", "'stop' must be a string or up to 4 strings");
      out->push_back(s.get<std::string>());
    }
  } else {
    return f.fail("stop", "'stop' must be a string or up to 4 strings");
  }
  return true;
}

bool parseMessages(Fields& f, const json* messages, std::vector<ChatMessage>* out) {
  if (!messages || !messages->is_array() || messages->empty()) {
    return f.fail("messages", "'messages' must be a non-empty array of {role, content}");
  }
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return f.fail(where, "'" + where + "' must be an object");
    for (const auto& [key, value] : m.items()) {
      if (key != "role" && key != "content" && key != "name") {
        return f.fail(where + "." + key, "'" + where + "." + key + "' is not supported by tfc "
                                         "(messages take role, content and name)");
      }
    }
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      return f.fail(where + ".role", "'" + where + ".role' must be a string");
    }
    ChatMessage message{role->get<std::string>(), ""};
    if (message.role == "developer") message.role = "system";  // OpenAI's newer name
    if (message.role != "system" && message.role != "user" && message.role != "assistant") {
      return f.fail(where + ".role", "'" + where + ".role' is '" + message.role +
                                         "'; tfc takes system, user and assistant");
    }
    auto content = m.find("content");
    if (content != m.end() && content->is_string()) {
      message.content = content->get<std::string>();
    } else if (content != m.end() && content->is_array()) {
      // Content parts: text ones are joined; others (images, audio) are refused.
      for (const json& part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string()) {
          return f.fail(where + ".content", "'" + where + ".content' parts must be "
                                            "{\"type\": \"text\", \"text\": ...}");
        }
        message.content += part["text"].get<std::string>();
      }
    } else {
      return f.fail(where + ".content", "'" + where + ".content' must be a string or text parts");
    }
    out->push_back(std::move(message));
  }
  return true;
}

bool parsePrompt(Fields& f, const json* prompt, CompletionRequest* out) {
  if (!prompt) return f.fail("prompt", "'prompt' is required");
  const json* one = prompt;
  if (prompt->is_array() && !prompt->empty() && !(*prompt)[0].is_number()) {
    if (prompt->size() != 1) {
      return f.fail("prompt", "tfc takes one prompt a request (" +
                                  std::to_string(prompt->size()) + " given)");
    }
    one = &(*prompt)[0];
  }
  if (one->is_string()) {
    out->prompt = one->get<std::string>();
    return true;
  }
  if (one->is_array()) {
    std::vector<int32_t> ids;
    for (const json& id : *one) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
        return f.fail("prompt", "'prompt' as tokens must hold non-negative integer ids");
      }
      ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    out->ids = std::move(ids);
    return true;
  }
  return f.fail("prompt", "'prompt' must be a string, or an array of token ids");
}

}  // namespace

std::string errorJson(const ApiError& error) {
  json body = {{"error",
                {{"message", error.message},
                 {"type", error.type},
                 {"param", error.param.empty() ? json(nullptr) : json(error.param)},
                 {"code", nullptr}}}};
  return dump(body);
}

bool parseCompletionRequest(const std::string& text, bool chat, const ChatTemplate& chatTemplate,
                            CompletionRequest* out, ApiError* error) {
  json body;
  try {
    body = json::parse(text);
  } catch (const json::exception& e) {
    error->message = std::string("the body is not valid JSON: ") + e.what();
    return false;
  }
  if (!body.is_object()) {
    error->message = "the body must be a JSON object";
    return false;
  }
  Fields f(body, error);
  static const std::set<std::string> kCompletion = {
      "model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "ignore_eos", "n", "stream",
      "stream_options", "stop", "seed", "user", "echo", "logprobs", "presence_penalty",
      "frequency_penalty", "best_of", "logit_bias", "suffix"};
  static const std::set<std::string> kChat = {
      "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p",
      "top_k", "ignore_eos", "n", "stream", "stream_options", "stop", "seed", "user", "logprobs",
      "top_logprobs", "presence_penalty", "frequency_penalty", "logit_bias", "tools",
      "tool_choice", "parallel_tool_calls", "response_format", "store", "metadata"};
  const std::set<std::string>& known = chat ? kChat : kCompletion;
  for (const auto& [key, value] : body.items()) {
    if (!known.count(key)) {
      return f.fail(key, "unknown field '" + key + "' (" +
                             (chat ? "/v1/chat/completions" : "/v1/completions") +
                             " takes the fields of OpenAI's API)");
    }
  }
  out->chat = chat;
  if (const json* model = f.get("model"); model && !model->is_string()) {
    return f.fail("model", "'model' must be a string");
  }
  std::optional<int64_t> n, maxTokens, seed, topK;
  if (!f.integer("n", 1, 1, &n) || !f.integer("max_tokens", 1, INT32_MAX, &maxTokens) ||
      !f.integer("seed", INT64_MIN, INT64_MAX, &seed) || !f.integer("top_k", 0, INT32_MAX, &topK) ||
      !f.number("temperature", 0, 2, false, &out->temperature) ||
      !f.number("top_p", 0, 1, true, &out->topP) || !f.boolean("stream", &out->stream) ||
      !f.boolean("ignore_eos", &out->ignoreEos)) {
    return false;
  }
  if (chat && !f.integer("max_completion_tokens", 1, INT32_MAX, &maxTokens)) return false;
  out->maxTokens = maxTokens;
  out->seed = seed;
  out->topK = static_cast<int32_t>(topK.value_or(0));
  if (const json* options = f.get("stream_options")) {
    if (!options->is_object()) return f.fail("stream_options", "'stream_options' must be an object");
    for (const auto& [key, value] : options->items()) {
      if (key != "include_usage" || !value.is_boolean()) {
        return f.fail("stream_options." + key, "'stream_options' takes include_usage (a boolean)");
      }
      out->includeUsage = value.get<bool>();
    }
  }
  if (!parseStop(f, f.get("stop"), &out->stop)) return false;
  const char* penalty = "no repetition penalties";
  if (!f.onlyDefault("presence_penalty", 0, penalty) ||
      !f.onlyDefault("frequency_penalty", 0, penalty) ||
      !f.onlyDefault("logit_bias", json::object(), "no logit bias") ||
      !f.onlyDefault("logprobs", chat ? json(false) : json(nullptr), "no log-probabilities")) {
    return false;
  }
  if (chat) {
    if (!f.onlyDefault("top_logprobs", nullptr, "no log-probabilities") ||
        !f.onlyDefault("tools", json::array(), "no tool calls") ||
        !f.onlyDefault("tool_choice", "none", "no tool calls") ||
        !f.onlyDefault("parallel_tool_calls", false, "no tool calls") ||
        !f.onlyDefault("response_format", json{{"type", "text"}}, "text responses only")) {
      return false;
    }
    std::vector<ChatMessage> messages;
    if (!parseMessages(f, f.get("messages"), &messages)) return false;
    out->prompt = chatTemplate.render(messages);
    return true;
  }
  if (!f.onlyDefault("echo", false, "no echo of the prompt") ||
      !f.onlyDefault("best_of", 1, "one completion a request") ||
      !f.onlyDefault("suffix", nullptr, "no insertion")) {
    return false;
  }
  return parsePrompt(f, f.get("prompt"), out);
}

namespace {

json usage(const Outcome& outcome) {
  return {{"prompt_tokens", outcome.promptTokens},
          {"completion_tokens", outcome.completionTokens},
          {"total_tokens", outcome.promptTokens + outcome.completionTokens}};
}

json finish(const std::string& reason) { return reason.empty() ? json(nullptr) : json(reason); }

}  // namespace

std::string completionJson(const CompletionRequest& request, const ResponseId& id,
                           const std::string& text, const Outcome& outcome) {
  json choice = {{"index", 0}, {"finish_reason", finish(outcome.finishReason)}, {"logprobs", nullptr}};
  if (request.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  json body = {{"id", id.id},
               {"object", request.chat ? "chat.completion" : "text_completion"},
               {"created", id.created},
               {"model", id.model},
               {"choices", json::array({choice})},
               {"usage", usage(outcome)}};
  return dump(body);
}

std::string chunkJson(const CompletionRequest& request, const ResponseId& id,
                      const std::string& delta, const std::string& finishReason, bool first) {
  json choice = {{"index", 0}, {"finish_reason", finish(finishReason)}, {"logprobs", nullptr}};
  if (request.chat) {
    json d = json::object();
    if (first) d["role"] = "assistant";
    if (!delta.empty() || (first && finishReason.empty())) d["content"] = delta;
    choice["delta"] = d;
  } else {
    choice["text"] = delta;
  }
  json body = {{"id", id.id},
               {"object", request.chat ? "chat.completion.chunk" : "text_completion"},
               {"created", id.created},
               {"model", id.model},
               {"choices", json::array({choice})}};
  return dump(body);
}

std::string usageChunkJson(const CompletionRequest& request, const ResponseId& id,
                           const Outcome& outcome) {
  json body = {{"id", id.id},
               {"object", request.chat ? "chat.completion.chunk" : "text_completion"},
               {"created", id.created},
               {"model", id.model},
               {"choices", json::array()},
               {"usage", usage(outcome)}};
  return dump(body);
}

}  // namespace tfc::serve
