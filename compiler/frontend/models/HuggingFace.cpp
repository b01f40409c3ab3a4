//===- HuggingFace.cpp - models from Hugging Face config.json -------------===//
//
// Each supported architecture maps its config fields onto one model of the
// library. A field that config.json leaves out takes the default of the
// architecture's transformers Config class (older transformers saved only the
// fields that differ from it). Anything the model cannot express is refused
// with the field's name rather than traced into a model that differs from
// the checkpoint's.
//
//===----------------------------------------------------------------------===//
#include "compiler/frontend/models/HuggingFace.h"
#include "support/UntrustedFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <charconv>
#include <optional>

namespace tfc::frontend {
namespace {

/// The context tfc-trace gives a model whose config allows more: the KV
/// cache is allocated for all of it, and 128K-token caches are rarely meant.
constexpr int64_t kDefaultContextCap = 4096;

/// The largest config.json read: real ones are a few KiB.
constexpr uint64_t kMaxConfigBytes = uint64_t{64} << 20;

/// Shortest text that reads back as `value` (so 1e-06 stays "1e-06").
std::string formatNumber(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

/// "a string (\"500000\")", "a number (2.5)", "null": what a JSON value is,
/// for messages that say which type a field has and which it needs.
std::string describe(const llvm::json::Value &value) {
  switch (value.kind()) {
  case llvm::json::Value::Null:
    return "null";
  case llvm::json::Value::Boolean:
    return *value.getAsBoolean() ? "true" : "false";
  case llvm::json::Value::Number: {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << value;
    return "a number (" + text + ")";
  }
  case llvm::json::Value::String: {
    llvm::StringRef text = *value.getAsString();
    std::string shown = text.take_front(40).str();
    return "a string (\"" + shown + (text.size() > 40 ? "...\")" : "\")");
  }
  case llvm::json::Value::Array:
    return "an array";
  case llvm::json::Value::Object:
    return "an object";
  }
  return "a JSON value";
}

/// Fields that transformers' Config classes themselves take null for, as
/// "the default" (n_inner: 4 x n_embd, head_dim: hidden_size / heads,
/// num_key_value_heads: the heads, sliding_window and rope_scaling: none),
/// and which save_pretrained writes as null. Any other field that is null is
/// refused: `"n_layer": null` is not a 12-layer model.
bool nullMeansDefault(llvm::StringRef key) {
  return llvm::is_contained({"architectures", "n_inner", "head_dim",
                             "num_key_value_heads", "sliding_window",
                             "rope_scaling", "rope_parameters"},
                            key);
}

/// Typed access to config.json's fields, with errors naming file and field.
class ConfigReader {
public:
  ConfigReader(std::string file, const llvm::json::Object &root)
      : file_(std::move(file)), root_(root) {}

  [[noreturn]] void fail(const llvm::Twine &message) const {
    throw TraceError(file_ + ": " + message.str());
  }

  [[noreturn]] void wrongType(llvm::StringRef key, llvm::StringRef expected,
                              const llvm::json::Value &value) const {
    fail("field '" + key + "' must be " + expected + ", not " +
         describe(value));
  }

  /// The field, or nullptr when absent or (for nullMeansDefault's fields)
  /// null; `expected` names its type for the error on any other null.
  const llvm::json::Value *find(llvm::StringRef key,
                                llvm::StringRef expected) const {
    return find(root_, key, key, expected);
  }

  /// The same for `key` of `object` (a nested field, `path` in messages:
  /// "rope_scaling.factor"); in a nested object null is never a default.
  const llvm::json::Value *find(const llvm::json::Object &object,
                                llvm::StringRef key, llvm::StringRef path,
                                llvm::StringRef expected) const {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return nullptr;
    if (value->kind() == llvm::json::Value::Null) {
      if (&object == &root_ && nullMeansDefault(key))
        return nullptr;
      fail("field '" + path + "' is null; it must be " + expected +
           (&object == &root_ ? " (leave it out for the default)" : ""));
    }
    return value;
  }

  int64_t integer(llvm::StringRef key, std::optional<int64_t> fallback) const {
    const llvm::json::Value *value = find(key, "an integer");
    if (!value) {
      if (!fallback)
        fail("missing field '" + key + "'");
      return *fallback;
    }
    std::optional<int64_t> v = value->getAsInteger();
    if (!v)
      wrongType(key, "an integer", *value);
    return *v;
  }

  double number(llvm::StringRef key, double fallback) const {
    const llvm::json::Value *value = find(key, "a number");
    if (!value)
      return fallback;
    return number(*value, key);
  }

  double number(const llvm::json::Value &value, llvm::StringRef path) const {
    std::optional<double> v = value.getAsNumber();
    if (!v)
      wrongType(path, "a number", value);
    return *v;
  }

  bool boolean(llvm::StringRef key, bool fallback) const {
    const llvm::json::Value *value = find(key, "true or false");
    if (!value)
      return fallback;
    std::optional<bool> v = value->getAsBoolean();
    if (!v)
      wrongType(key, "true or false", *value);
    return *v;
  }

  std::string string(llvm::StringRef key, llvm::StringRef fallback) const {
    const llvm::json::Value *value = find(key, "a string");
    if (!value)
      return fallback.str();
    std::optional<llvm::StringRef> v = value->getAsString();
    if (!v)
      wrongType(key, "a string", *value);
    return v->str();
  }

  const llvm::json::Object *object(llvm::StringRef key) const {
    const llvm::json::Value *value = find(key, "an object");
    if (!value)
      return nullptr;
    const llvm::json::Object *v = value->getAsObject();
    if (!v)
      wrongType(key, "an object", *value);
    return v;
  }

  const llvm::json::Object &root() const { return root_; }

private:
  std::string file_;
  const llvm::json::Object &root_;
};

/// Collects `key=value` settings and notes for one model.
struct Mapping {
  HuggingFaceModel &out;
  void set(llvm::StringRef key, int64_t value) {
    out.settings.push_back(key.str() + "=" + std::to_string(value));
  }
  void set(llvm::StringRef key, double value) {
    out.settings.push_back(key.str() + "=" + formatNumber(value));
  }
  void set(llvm::StringRef key, bool value) {
    out.settings.push_back(key.str() + "=" + (value ? "1" : "0"));
  }
  void set(llvm::StringRef key, const std::string &value) {
    out.settings.push_back(key.str() + "=" + value);
  }
  void note(const std::string &text) { out.notes.push_back(text); }
};

void mapGPT2(const ConfigReader &c, Mapping &m) {
  m.set("n_layer", c.integer("n_layer", 12));
  m.set("n_head", c.integer("n_head", 12));
  m.set("n_embd", c.integer("n_embd", 768));
  m.set("vocab_size", c.integer("vocab_size", 50257));
  int64_t positions = c.integer("n_positions", 1024);
  m.set("n_positions", positions);
  m.set("n_ctx", positions);
  if (c.find("n_inner", "an integer"))
    m.set("n_inner", c.integer("n_inner", std::nullopt));
  m.set("layer_norm_eps", c.number("layer_norm_epsilon", 1e-5));
  std::string activation = c.string("activation_function", "gelu_new");
  if (activation == "gelu_new" || activation == "gelu_pytorch_tanh")
    m.set("activation", std::string("gelu_new"));
  else if (activation == "gelu")
    m.set("activation", std::string("gelu"));
  else
    c.fail("activation_function '" + activation +
           "' is not supported (supported: gelu_new, gelu_pytorch_tanh, "
           "gelu)");
  if (!c.boolean("scale_attn_weights", true))
    c.fail("scale_attn_weights false is not supported");
  if (c.boolean("scale_attn_by_inverse_layer_idx", false))
    c.fail("scale_attn_by_inverse_layer_idx true is not supported");
  if (c.boolean("add_cross_attention", false))
    c.fail("add_cross_attention true is not supported");
  if (!c.boolean("tie_word_embeddings", true))
    c.fail("tie_word_embeddings false is not supported for GPT-2 (its LM "
           "head is wte)");
  double dropout = c.number("resid_pdrop", 0.1);
  if (dropout > 0)
    m.note("dropout is off; the config's resid_pdrop " +
           formatNumber(dropout) + " applies with --set dropout=" +
           formatNumber(dropout) + " (for training)");
}

/// HF's rope_theta and rope_scaling, in either spelling: transformers 5's
/// `rope_parameters` {rope_type, rope_theta, ...} or the older top-level
/// `rope_theta` and `rope_scaling` {rope_type or type, ...}.
void mapRope(const ConfigReader &c, Mapping &m) {
  const llvm::json::Object *params = c.object("rope_parameters");
  const llvm::json::Object *scaling = params ? params : c.object("rope_scaling");
  const char *field = params ? "rope_parameters" : "rope_scaling";
  auto path = [&](llvm::StringRef key) {
    return (llvm::Twine(field) + "." + key).str();
  };
  // A nested number: present, of the right type, or an error naming it.
  auto number = [&](llvm::StringRef key) {
    const llvm::json::Value *v = c.find(*scaling, key, path(key), "a number");
    if (!v)
      c.fail("missing field '" + path(key) + "'");
    return c.number(*v, path(key));
  };
  double theta = c.number("rope_theta", 10000.0);
  if (params)
    if (c.find(*params, "rope_theta", path("rope_theta"), "a number"))
      theta = number("rope_theta");
  m.set("rope_theta", theta);
  if (!scaling)
    return;
  // transformers reads rope_type, then the older "type"; an object naming
  // neither is not "no scaling" (that is null) but a config that lost it.
  std::optional<std::string> type;
  for (llvm::StringRef key : {"rope_type", "type"}) {
    if (type)
      break;
    const llvm::json::Value *v = scaling->get(key);
    if (!v || v->kind() == llvm::json::Value::Null)
      continue;
    if (!v->getAsString())
      c.wrongType(path(key), "a string", *v);
    type = v->getAsString()->str();
  }
  if (!type)
    c.fail(llvm::Twine(field) + " names no 'rope_type' (or 'type'): give one "
           "of default, linear, llama3, or make " + field +
           " null for no scaling");
  if (*type == "default")
    return;
  if (*type == "linear") {
    m.set("rope_scaling", std::string("linear"));
    m.set("rope_factor", number("factor"));
  } else if (*type == "llama3") {
    m.set("rope_scaling", std::string("llama3"));
    m.set("rope_factor", number("factor"));
    m.set("rope_low_freq_factor", number("low_freq_factor"));
    m.set("rope_high_freq_factor", number("high_freq_factor"));
    const std::string original = path("original_max_position_embeddings");
    const llvm::json::Value *v = c.find(
        *scaling, "original_max_position_embeddings", original, "an integer");
    if (!v)
      c.fail("missing field '" + original + "'");
    std::optional<int64_t> context = v->getAsInteger();
    if (!context)
      c.wrongType(original, "an integer", *v);
    m.set("rope_original_context", *context);
  } else {
    c.fail(llvm::Twine(field) + " type '" + *type +
           "' is not supported (supported: default, linear, llama3)");
  }
}

/// LLaMA, Mistral, Qwen2 and Mixtral: one model of the library with the
/// features each turns on. `defaults` are the architecture's Config class defaults.
struct LlamaDefaults {
  int64_t hidden, intermediate, layers, heads, vocab, context;
  double rmsEps;
};

void mapLlamaFamily(const ConfigReader &c, Mapping &m, llvm::StringRef type,
                    const LlamaDefaults &defaults) {
  int64_t hidden = c.integer("hidden_size", defaults.hidden);
  int64_t heads = c.integer("num_attention_heads", defaults.heads);
  m.set("dim", hidden);
  m.set("hidden_dim", c.integer("intermediate_size", defaults.intermediate));
  m.set("n_layer", c.integer("num_hidden_layers", defaults.layers));
  m.set("n_head", heads);
  m.set("n_kv_head", c.integer("num_key_value_heads", heads));
  m.set("vocab_size", c.integer("vocab_size", defaults.vocab));
  if (c.find("head_dim", "an integer")) {
    int64_t headDim = c.integer("head_dim", std::nullopt);
    if (heads <= 0 || headDim * heads != hidden)
      m.set("head_dim", headDim);
  }
  m.set("rms_eps", c.number("rms_norm_eps", defaults.rmsEps));
  mapRope(c, m);
  m.set("tie_embeddings", c.boolean("tie_word_embeddings", false));
  std::string act = c.string("hidden_act", "silu");
  if (act != "silu")
    c.fail("hidden_act '" + act + "' is not supported (supported: silu)");

  if (type == "llama") {
    m.set("attention_bias", c.boolean("attention_bias", false));
    m.set("mlp_bias", c.boolean("mlp_bias", false));
  }
  if (type == "qwen2")
    m.set("qkv_bias", true);

  int64_t maxContext = c.integer("max_position_embeddings", defaults.context);
  int64_t context = std::min(maxContext, kDefaultContextCap);
  m.set("n_ctx", context);
  if (context < maxContext)
    m.note("n_ctx " + std::to_string(context) + " (the KV cache's length) of "
           "the config's max_position_embeddings " +
           std::to_string(maxContext) + "; --set n_ctx=N for another");

  // A sliding window that never binds is plain causal attention.
  std::optional<int64_t> window;
  if ((type == "mistral" || type == "mixtral") &&
      c.find("sliding_window", "an integer"))
    window = c.integer("sliding_window", std::nullopt);
  if (type == "qwen2" && c.boolean("use_sliding_window", false))
    window = c.integer("sliding_window", 4096);
  if (window)
    m.set("sliding_window", *window);

  if (type == "mixtral") {
    m.set("n_expert", c.integer("num_local_experts", 8));
    m.set("n_expert_per_tok", c.integer("num_experts_per_tok", 2));
    // HF adds the load-balancing loss to the loss only when the model is
    // asked for router logits (output_router_logits); training a mixture
    // without it lets routing collapse, so tfc's loss always has it.
    m.set("router_aux_loss_coef", c.number("router_aux_loss_coef", 0.001));
    double jitter = c.number("router_jitter_noise", 0.0);
    if (jitter != 0)
      c.fail("router_jitter_noise " + formatNumber(jitter) +
             " is not supported (HF multiplies the MoE input by random "
             "noise while training; set it to 0)");
  }
}

struct Architecture {
  const char *name;      ///< as in config.json's "architectures"
  const char *modelType; ///< as in config.json's "model_type"
  const char *model;     ///< the library's model
  void (*map)(const ConfigReader &, Mapping &);
};

const Architecture kArchitectures[] = {
    {"GPT2LMHeadModel", "gpt2", "gpt2", mapGPT2},
    {"LlamaForCausalLM", "llama", "llama",
     [](const ConfigReader &c, Mapping &m) {
       mapLlamaFamily(c, m, "llama", {4096, 11008, 32, 32, 32000, 2048, 1e-6});
     }},
    {"MistralForCausalLM", "mistral", "llama",
     [](const ConfigReader &c, Mapping &m) {
       mapLlamaFamily(c, m, "mistral",
                      {4096, 14336, 32, 32, 32000, 131072, 1e-6});
     }},
    {"Qwen2ForCausalLM", "qwen2", "llama",
     [](const ConfigReader &c, Mapping &m) {
       mapLlamaFamily(c, m, "qwen2", {4096, 22016, 32, 32, 151936, 32768, 1e-6});
     }},
    {"MixtralForCausalLM", "mixtral", "mixtral",
     [](const ConfigReader &c, Mapping &m) {
       mapLlamaFamily(c, m, "mixtral",
                      {4096, 14336, 32, 32, 32000, 131072, 1e-5});
     }},
};

} // namespace

std::string supportedHuggingFaceArchitectures() {
  std::vector<std::string> names;
  for (const Architecture &arch : kArchitectures)
    names.push_back(arch.name);
  return llvm::join(names, ", ");
}

HuggingFaceModel readHuggingFaceConfig(const std::string &path) {
  std::string file = path;
  if (llvm::sys::fs::is_directory(path)) {
    llvm::SmallString<256> joined(path);
    llvm::sys::path::append(joined, "config.json");
    file = joined.str().str();
  }
  // config.json comes from whoever published the model: a FIFO in its place
  // must not block, a huge file not be read whole, and deep nesting not
  // overflow the parser's stack (support/UntrustedFile.h).
  auto buffer = readUntrustedFile(file, kMaxConfigBytes, "a config.json");
  if (!buffer)
    throw TraceError("cannot read '" + file +
                     "': " + llvm::toString(buffer.takeError()));
  llvm::Expected<llvm::json::Value> json =
      parseBoundedJson((*buffer)->getBuffer());
  if (!json)
    throw TraceError(file + ": not valid JSON: " +
                     llvm::toString(json.takeError()));
  const llvm::json::Object *root = json->getAsObject();
  if (!root)
    throw TraceError(file + ": expected a JSON object (a Hugging Face "
                            "config.json)");
  ConfigReader config(file, *root);

  // "architectures" names the class that saved the weights; "model_type" is
  // all that a config saved from a bare Config class has.
  std::string name, modelType = config.string("model_type", "");
  if (const llvm::json::Value *list =
          config.find("architectures", "a list of names")) {
    const llvm::json::Array *names = list->getAsArray();
    if (!names || names->empty() || !(*names)[0].getAsString())
      config.fail("field 'architectures' must be a non-empty list of names");
    if (names->size() > 1)
      config.fail("field 'architectures' lists " +
                  llvm::Twine(names->size()) + " classes; expected one");
    name = (*names)[0].getAsString()->str();
  }
  if (name.empty() && modelType.empty())
    config.fail("neither 'architectures' nor 'model_type' says which "
                "architecture this is (supported: " +
                supportedHuggingFaceArchitectures() + ")");
  const Architecture *arch = nullptr;
  for (const Architecture &candidate : kArchitectures)
    if (name.empty() ? modelType == candidate.modelType
                     : name == candidate.name)
      arch = &candidate;
  llvm::StringRef what = name.empty() ? modelType : name;
  if (!arch) {
    config.fail("architecture '" + what + "' is not supported (supported: " +
                supportedHuggingFaceArchitectures() + ")");
  }

  HuggingFaceModel result;
  result.architecture = arch->name;
  result.model = findModel(arch->model);
  Mapping mapping{result};
  arch->map(config, mapping);
  return result;
}

} // namespace tfc::frontend
