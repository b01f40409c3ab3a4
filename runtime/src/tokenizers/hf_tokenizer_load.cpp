// Reading a tokenizer.json (and the configuration files next to it) into an HfTokenizer.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "base/file_util.hpp"
#include "tokenizers/hf_tokenizer_impl.hpp"
#include "base/json_value.hpp"
#include "tfc/runtime/hf_tokenizer.hpp"
#include "base/unicode.hpp"

namespace tfc {
namespace {

using internal::JsonValue;
using internal::hf::AddedToken;
using internal::hf::DecoderStep;
using internal::hf::NormalizerStep;
using internal::hf::PrependScheme;
using internal::hf::PreTokenizerStep;

struct Reporter {
  std::string_view text;
  std::string name;

  Status at(const JsonValue& value, const std::string& path, const std::string& message,
            tfc_status_code_t code = TFC_DATA_LOSS) const {
    return Status::error(code, "%s:%s: %s: %s", name.c_str(),
                         internal::lineColumn(text, value.offset).c_str(), path.c_str(),
                         message.c_str());
  }
  Status unsupported(const JsonValue& value, const std::string& path,
                     const std::string& message) const {
    return at(value, path, message, TFC_UNIMPLEMENTED);
  }
  Status expect(const JsonValue& value, const std::string& path, JsonValue::Kind kind) const {
    return at(value, path,
              std::string("expected ") + JsonValue::kindName(kind) + ", found " +
                  JsonValue::kindName(value.kind));
  }
};

std::string quote(std::string_view text) { return internal::quoteForMessage(text, 120); }

// Typed access to members, with errors naming the path.
struct Object {
  const Reporter& reporter;
  const JsonValue& value;
  std::string path;

  std::string memberPath(std::string_view key) const {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }
  // The member, or nullptr when it is absent or null.
  const JsonValue* optional(std::string_view key) const {
    const JsonValue* member = value.get(key);
    return member == nullptr || member->isNull() ? nullptr : member;
  }
  Status string(std::string_view key, std::string* out, bool required = true) const {
    const JsonValue* member = optional(key);
    if (member == nullptr) {
      if (!required) return Status();
      return reporter.at(value, path, "missing \"" + std::string(key) + "\"");
    }
    if (member->kind != JsonValue::kString) {
      return reporter.expect(*member, memberPath(key), JsonValue::kString);
    }
    *out = member->text;
    return Status();
  }
  Status boolean(std::string_view key, bool* out) const {  // keeps *out when absent
    const JsonValue* member = optional(key);
    if (member == nullptr) return Status();
    if (member->kind != JsonValue::kBool) {
      return reporter.expect(*member, memberPath(key), JsonValue::kBool);
    }
    *out = member->boolean;
    return Status();
  }
  Status type(std::string* out) const { return string("type", out); }
};

Status checkObject(const Reporter& reporter, const JsonValue& value, const std::string& path) {
  if (value.kind != JsonValue::kObject) return reporter.expect(value, path, JsonValue::kObject);
  return Status();
}

Status parsePrependScheme(const Object& object, PrependScheme* out) {
  std::string scheme = "always";
  TFC_RETURN_IF_ERROR(object.string("prepend_scheme", &scheme, /*required=*/false));
  // Older files say add_prefix_space instead.
  if (object.optional("prepend_scheme") == nullptr) {
    bool addPrefixSpace = true;
    TFC_RETURN_IF_ERROR(object.boolean("add_prefix_space", &addPrefixSpace));
    scheme = addPrefixSpace ? "always" : "never";
  }
  if (scheme == "always") {
    *out = PrependScheme::kAlways;
  } else if (scheme == "first") {
    *out = PrependScheme::kFirst;
  } else if (scheme == "never") {
    *out = PrependScheme::kNever;
  } else {
    return object.reporter.at(
        *object.optional("prepend_scheme"), object.memberPath("prepend_scheme"),
        "unknown prepend_scheme " + quote(scheme) + " (known: always, first, never)");
  }
  return Status();
}

// A Replace's {"String": "..."} pattern (Regex patterns are not supported).
Status parseReplacePattern(const Object& object, std::string* out) {
  const JsonValue* pattern = object.optional("pattern");
  std::string path = object.memberPath("pattern");
  if (pattern == nullptr) {
    return object.reporter.at(object.value, object.path, "missing \"pattern\"");
  }
  TFC_RETURN_IF_ERROR(checkObject(object.reporter, *pattern, path));
  Object p{object.reporter, *pattern, path};
  if (p.optional("String") == nullptr) {
    return object.reporter.unsupported(*pattern, path,
                                       "only {\"String\": ...} patterns are supported here");
  }
  TFC_RETURN_IF_ERROR(p.string("String", out));
  if (out->empty()) return object.reporter.at(*pattern, path, "empty pattern");
  return Status();
}

// The single character of |text|, or nullopt.
std::optional<uint32_t> singleChar(std::string_view text) {
  uint32_t cp = 0;
  if (text.empty() || internal::decodeUtf8(text, 0, &cp) != text.size()) return std::nullopt;
  return cp;
}

struct Parser {
  Reporter reporter;
  HfTokenizer::Impl* impl;

  Status parseModel(const JsonValue& model);
  Status parseAddedTokens(const JsonValue& list);
  // A Sequence's steps: each element of the array |key| parsed by |parse|.
  Status parseSequence(const Object& object, std::string_view key,
                       Status (Parser::*parse)(const JsonValue&, const std::string&));
  Status parseNormalizer(const JsonValue& value, const std::string& path);
  Status parsePreTokenizer(const JsonValue& value, const std::string& path);
  Status parseDecoder(const JsonValue& value, const std::string& path);
  Status parsePostProcessor(const JsonValue& value, const std::string& path);
  std::optional<int32_t> idOf(const std::string& token) const {
    auto it = impl->vocab.find(token);
    return it == impl->vocab.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
};

Status Parser::parseModel(const JsonValue& model) {
  const std::string path = "model";
  TFC_RETURN_IF_ERROR(checkObject(reporter, model, path));
  Object object{reporter, model, path};
  std::string type;
  TFC_RETURN_IF_ERROR(object.string("type", &type, /*required=*/false));
  if (type.empty() && object.optional("merges") != nullptr) type = "BPE";  // older files
  if (type != "BPE") {
    const JsonValue* typeValue = object.optional("type");
    return reporter.unsupported(typeValue ? *typeValue : model, path + ".type",
                                "model type " + quote(type.empty() ? "(none)" : type) +
                                    " is not supported: tfc reads BPE tokenizers only "
                                    "(byte-level like GPT-2, LLaMA 3, Qwen2, or SentencePiece-"
                                    "style like LLaMA 2, Mistral)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const JsonValue* value = object.optional(key);
    if (value != nullptr && !(value->kind == JsonValue::kString && value->text.empty())) {
      return reporter.unsupported(*value, object.memberPath(key),
                                  std::string(key) +
                                      " is not supported (BPE with word "
                                      "prefixes or suffixes)");
    }
  }
  if (const JsonValue* dropout = object.optional("dropout")) {
    if (dropout->kind != JsonValue::kNumber || std::strtod(dropout->text.c_str(), nullptr) != 0) {
      return reporter.unsupported(*dropout, object.memberPath("dropout"),
                                  "BPE dropout is not supported (it makes encoding random)");
    }
  }
  TFC_RETURN_IF_ERROR(object.boolean("byte_fallback", &impl->byteFallback));
  TFC_RETURN_IF_ERROR(object.boolean("ignore_merges", &impl->ignoreMerges));
  TFC_RETURN_IF_ERROR(object.boolean("fuse_unk", &impl->fuseUnk));

  const JsonValue* vocab = object.optional("vocab");
  if (vocab == nullptr) return reporter.at(model, path, "missing \"vocab\"");
  TFC_RETURN_IF_ERROR(checkObject(reporter, *vocab, "model.vocab"));
  for (const auto& [token, idValue] : vocab->members) {
    std::string entryPath = "model.vocab[" + quote(token) + "]";
    std::optional<int64_t> id = idValue.asInt();
    if (!id || *id < 0 || *id >= INT32_MAX) {
      return reporter.at(idValue, entryPath,
                         "expected an id in [0, 2^31 - 1), found " + quote(idValue.text));
    }
    if (static_cast<size_t>(*id) >= impl->idToToken.size()) {
      // Ids far beyond the vocabulary's size would make the table huge: a vocabulary's ids
      // are 0..n-1 (holes are allowed, up to as many as there are entries).
      if (static_cast<size_t>(*id) >= 2 * vocab->members.size() + 1024) {
        return reporter.at(idValue, entryPath,
                           "id " + std::to_string(*id) + " is far beyond the vocabulary's " +
                               std::to_string(vocab->members.size()) + " entries");
      }
      impl->idToToken.resize(*id + 1);
      impl->hasToken.resize(*id + 1, false);
    }
    if (impl->hasToken[*id]) {
      return reporter.at(
          idValue, entryPath,
          "id " + std::to_string(*id) + " is also the id of " + quote(impl->idToToken[*id]));
    }
    if (!impl->vocab.emplace(token, static_cast<int32_t>(*id)).second) {
      return reporter.at(idValue, entryPath, "token appears twice");
    }
    impl->idToToken[*id] = token;
    impl->hasToken[*id] = true;
  }
  impl->inModel = impl->hasToken;
  impl->byteFallbackIds.fill(-1);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    if (auto id = idOf(name)) impl->byteFallbackIds[b] = *id;
  }

  std::string unk;
  TFC_RETURN_IF_ERROR(object.string("unk_token", &unk, /*required=*/false));
  if (object.optional("unk_token") != nullptr) {
    impl->unkId = idOf(unk);
    if (!impl->unkId) {
      return reporter.at(*object.optional("unk_token"), "model.unk_token",
                         quote(unk) + " is not in model.vocab");
    }
  }

  const JsonValue* merges = object.optional("merges");
  if (merges == nullptr) return reporter.at(model, path, "missing \"merges\"");
  if (merges->kind != JsonValue::kArray) {
    return reporter.expect(*merges, "model.merges", JsonValue::kArray);
  }
  impl->merges.reserve(merges->items.size());
  impl->mergeable.assign(impl->idToToken.size(), false);
  for (size_t rank = 0; rank < merges->items.size(); ++rank) {
    const JsonValue& merge = merges->items[rank];
    std::string mergePath = "model.merges[" + std::to_string(rank) + "]";
    std::string parts[3];
    if (merge.kind == JsonValue::kString) {
      size_t space = merge.text.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == merge.text.size() ||
          merge.text.find(' ', space + 1) != std::string::npos) {
        return reporter.at(
            merge, mergePath,
            "expected two tokens separated by one space, found " + quote(merge.text));
      }
      parts[0] = merge.text.substr(0, space);
      parts[1] = merge.text.substr(space + 1);
    } else if (merge.kind == JsonValue::kArray && merge.items.size() == 2 &&
               merge.items[0].kind == JsonValue::kString &&
               merge.items[1].kind == JsonValue::kString) {
      parts[0] = merge.items[0].text;
      parts[1] = merge.items[1].text;
    } else {
      return reporter.at(merge, mergePath, "expected \"a b\" or [\"a\", \"b\"]");
    }
    parts[2] = parts[0] + parts[1];
    int32_t ids[3];
    for (int k = 0; k < 3; ++k) {
      std::optional<int32_t> id = idOf(parts[k]);
      if (!id) {
        return reporter.at(merge, mergePath,
                           std::string(k < 2 ? "token " : "the merged token ") + quote(parts[k]) +
                               " is not in model.vocab");
      }
      ids[k] = *id;
    }
    impl->mergeable[ids[0]] = true;
    impl->mergeable[ids[1]] = true;
    // A repeated pair keeps its first rank, as `tokenizers` does.
    impl->merges.emplace(internal::bpePairKey(ids[0], ids[1]),
                         internal::BpeMerge{static_cast<int32_t>(rank), ids[2]});
  }
  return Status();
}

Status Parser::parseAddedTokens(const JsonValue& list) {
  if (list.kind != JsonValue::kArray) {
    return reporter.expect(list, "added_tokens", JsonValue::kArray);
  }
  for (size_t i = 0; i < list.items.size(); ++i) {
    const JsonValue& entry = list.items[i];
    std::string path = "added_tokens[" + std::to_string(i) + "]";
    TFC_RETURN_IF_ERROR(checkObject(reporter, entry, path));
    Object object{reporter, entry, path};
    AddedToken token;
    TFC_RETURN_IF_ERROR(object.string("content", &token.content));
    if (token.content.empty()) return reporter.at(entry, path, "empty content");
    const JsonValue* idValue = object.optional("id");
    std::optional<int64_t> id = idValue ? idValue->asInt() : std::nullopt;
    if (!id || *id < 0 || *id >= INT32_MAX) {
      return reporter.at(idValue ? *idValue : entry, path + ".id",
                         "expected an id in [0, 2^31 - 1)");
    }
    TFC_RETURN_IF_ERROR(object.boolean("special", &token.special));
    // `tokenizers`' default: special tokens are matched in the raw text.
    token.normalized = !token.special;
    TFC_RETURN_IF_ERROR(object.boolean("normalized", &token.normalized));
    TFC_RETURN_IF_ERROR(object.boolean("lstrip", &token.lstrip));
    TFC_RETURN_IF_ERROR(object.boolean("rstrip", &token.rstrip));
    TFC_RETURN_IF_ERROR(object.boolean("single_word", &token.singleWord));
    token.id = static_cast<int32_t>(*id);
    size_t limit = std::max<size_t>(impl->idToToken.size(), list.items.size()) * 2 + 1024;
    if (static_cast<size_t>(*id) >= limit) {
      return reporter.at(*idValue, path + ".id",
                         "id " + std::to_string(*id) + " is far beyond the vocabulary's size");
    }
    if (static_cast<size_t>(*id) >= impl->idToToken.size()) {
      impl->idToToken.resize(*id + 1);
      impl->hasToken.resize(*id + 1, false);
    }
    if (impl->hasToken[*id] && impl->idToToken[*id] != token.content) {
      return reporter.at(*idValue, path + ".id",
                         "id " + std::to_string(*id) + " of " + quote(token.content) +
                             " is already the id of " + quote(impl->idToToken[*id]));
    }
    auto existing = impl->vocab.find(token.content);
    if (existing != impl->vocab.end() && existing->second != token.id) {
      return reporter.at(*idValue, path + ".id",
                         quote(token.content) + " has id " + std::to_string(token.id) + " but id " +
                             std::to_string(existing->second) + " in model.vocab");
    }
    impl->idToToken[*id] = token.content;
    impl->hasToken[*id] = true;
    impl->vocab.emplace(token.content, token.id);
    impl->addedTokens.push_back(std::move(token));
  }
  return Status();
}

Status Parser::parseSequence(const Object& object, std::string_view key,
                             Status (Parser::*parse)(const JsonValue&, const std::string&)) {
  const JsonValue* list = object.optional(key);
  std::string listPath = object.memberPath(key);
  if (list == nullptr || list->kind != JsonValue::kArray) {
    return reporter.at(list ? *list : object.value, listPath, "expected an array");
  }
  for (size_t i = 0; i < list->items.size(); ++i) {
    TFC_RETURN_IF_ERROR((this->*parse)(list->items[i], listPath + "[" + std::to_string(i) + "]"));
  }
  return Status();
}

Status Parser::parseNormalizer(const JsonValue& value, const std::string& path) {
  if (value.isNull()) return Status();
  TFC_RETURN_IF_ERROR(checkObject(reporter, value, path));
  Object object{reporter, value, path};
  std::string type;
  TFC_RETURN_IF_ERROR(object.type(&type));
  if (type == "Sequence") {
    TFC_RETURN_IF_ERROR(parseSequence(object, "normalizers", &Parser::parseNormalizer));
  } else if (type == "NFC") {
    impl->normalizer.push_back({NormalizerStep::kNfc, "", ""});
  } else if (type == "Prepend") {
    NormalizerStep step{NormalizerStep::kPrepend, "", ""};
    TFC_RETURN_IF_ERROR(object.string("prepend", &step.content));
    impl->normalizer.push_back(std::move(step));
  } else if (type == "Replace") {
    NormalizerStep step{NormalizerStep::kReplace, "", ""};
    TFC_RETURN_IF_ERROR(parseReplacePattern(object, &step.pattern));
    TFC_RETURN_IF_ERROR(object.string("content", &step.content));
    impl->normalizer.push_back(std::move(step));
  } else {
    return reporter.unsupported(value, path + ".type",
                                "normalizer " + quote(type) +
                                    " is not supported (supported: NFC, Prepend, Replace, "
                                    "Sequence)");
  }
  return Status();
}

// A split's "behavior" (absent: Isolated, the default of `tokenizers`).
Status parseBehavior(const Object& object, PreTokenizerStep::Behavior* out) {
  using Behavior = PreTokenizerStep::Behavior;
  static const std::pair<const char*, Behavior> kBehaviors[] = {
      {"Isolated", Behavior::kIsolated},
      {"Removed", Behavior::kRemoved},
      {"MergedWithPrevious", Behavior::kMergedWithPrevious},
      {"MergedWithNext", Behavior::kMergedWithNext},
      {"Contiguous", Behavior::kContiguous}};
  std::string behavior = "Isolated";
  TFC_RETURN_IF_ERROR(object.string("behavior", &behavior, /*required=*/false));
  auto known = std::find_if(std::begin(kBehaviors), std::end(kBehaviors),
                            [&](const auto& entry) { return behavior == entry.first; });
  if (known == std::end(kBehaviors)) {
    return object.reporter.at(*object.optional("behavior"), object.memberPath("behavior"),
                              "unknown split behavior " + quote(behavior));
  }
  *out = known->second;
  return Status();
}

Status Parser::parsePreTokenizer(const JsonValue& value, const std::string& path) {
  if (value.isNull()) return Status();
  TFC_RETURN_IF_ERROR(checkObject(reporter, value, path));
  Object object{reporter, value, path};
  std::string type;
  TFC_RETURN_IF_ERROR(object.type(&type));
  if (type == "Sequence") {
    TFC_RETURN_IF_ERROR(parseSequence(object, "pretokenizers", &Parser::parsePreTokenizer));
  } else if (type == "ByteLevel") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::kByteLevel;
    step.addPrefixSpace = true;  // `tokenizers`' default
    TFC_RETURN_IF_ERROR(object.boolean("add_prefix_space", &step.addPrefixSpace));
    TFC_RETURN_IF_ERROR(object.boolean("use_regex", &step.useRegex));
    impl->preTokenizer.push_back(step);
  } else if (type == "Split") {
    PreTokenizerStep step;
    bool invert = false;
    TFC_RETURN_IF_ERROR(object.boolean("invert", &invert));
    if (invert) {
      return reporter.unsupported(value, path + ".invert", "inverted Split is not supported");
    }
    std::string behavior;
    TFC_RETURN_IF_ERROR(object.string("behavior", &behavior));
    TFC_RETURN_IF_ERROR(parseBehavior(object, &step.behavior));
    using Behavior = PreTokenizerStep::Behavior;
    const JsonValue* pattern = object.optional("pattern");
    if (pattern == nullptr) return reporter.at(value, path, "missing \"pattern\"");
    TFC_RETURN_IF_ERROR(checkObject(reporter, *pattern, path + ".pattern"));
    Object patternObject{reporter, *pattern, path + ".pattern"};
    if (patternObject.optional("String") != nullptr) {
      // A literal, as Gemma's files split at " ": any behavior.
      step.kind = PreTokenizerStep::kSplitString;
      TFC_RETURN_IF_ERROR(patternObject.string("String", &step.literal));
      if (step.literal.empty()) {
        return reporter.at(*pattern, path + ".pattern.String", "empty pattern");
      }
      impl->preTokenizer.push_back(std::move(step));
      return Status();
    }
    step.kind = PreTokenizerStep::kSplit;
    if (patternObject.optional("Regex") == nullptr) {
      return reporter.at(*pattern, path + ".pattern",
                         "expected {\"Regex\": ...} or {\"String\": ...}");
    }
    std::string regex;
    TFC_RETURN_IF_ERROR(patternObject.string("Regex", &regex));
    std::optional<internal::SplitPattern> knownRegex = internal::splitPatternOf(regex);
    if (!knownRegex) {
      return reporter.unsupported(*patternObject.optional("Regex"), path + ".pattern.Regex",
                                  "the pre-tokenization regex " + quote(regex) +
                                      " is not one tfc knows (GPT-2's, LLaMA 3's, Qwen2's); "
                                      "tfc matches those by hand-written code, not by a "
                                      "regex engine");
    }
    // Every character is in some match of these patterns: only Isolated keeps the text.
    if (step.behavior != Behavior::kIsolated) {
      return reporter.unsupported(
          *object.optional("behavior"), path + ".behavior",
          "Split behavior " + quote(behavior) + " is not supported with a regex (only Isolated)");
    }
    step.pattern = *knownRegex;
    impl->preTokenizer.push_back(step);
  } else if (type == "Metaspace") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::kMetaspace;
    TFC_RETURN_IF_ERROR(object.string("replacement", &step.replacement));
    if (!singleChar(step.replacement)) {
      return reporter.at(*object.optional("replacement"), path + ".replacement",
                         "expected one character");
    }
    TFC_RETURN_IF_ERROR(parsePrependScheme(object, &step.prependScheme));
    TFC_RETURN_IF_ERROR(object.boolean("split", &step.split));
    impl->preTokenizer.push_back(std::move(step));
  } else if (type == "Punctuation") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::kPunctuation;
    TFC_RETURN_IF_ERROR(parseBehavior(object, &step.behavior));
    impl->preTokenizer.push_back(step);
  } else if (type == "Digits") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::kDigits;
    TFC_RETURN_IF_ERROR(object.boolean("individual_digits", &step.individualDigits));
    impl->preTokenizer.push_back(step);
  } else {
    return reporter.unsupported(value, path + ".type",
                                "pre-tokenizer " + quote(type) +
                                    " is not supported (supported: ByteLevel, Split, Metaspace, "
                                    "Digits, Punctuation, Sequence)");
  }
  return Status();
}

Status Parser::parseDecoder(const JsonValue& value, const std::string& path) {
  TFC_RETURN_IF_ERROR(checkObject(reporter, value, path));
  Object object{reporter, value, path};
  std::string type;
  TFC_RETURN_IF_ERROR(object.type(&type));
  DecoderStep step;
  if (type == "Sequence") {
    TFC_RETURN_IF_ERROR(parseSequence(object, "decoders", &Parser::parseDecoder));
    return Status();
  } else if (type == "ByteLevel") {
    step.kind = DecoderStep::kByteLevel;
    impl->byteLevel = true;
  } else if (type == "Replace") {
    step.kind = DecoderStep::kReplace;
    TFC_RETURN_IF_ERROR(parseReplacePattern(object, &step.pattern));
    TFC_RETURN_IF_ERROR(object.string("content", &step.content));
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::kFuse;
  } else if (type == "Strip") {
    step.kind = DecoderStep::kStrip;
    std::string content;
    TFC_RETURN_IF_ERROR(object.string("content", &content));
    std::optional<uint32_t> cp = singleChar(content);
    if (!cp)
      return reporter.at(*object.optional("content"), path + ".content", "expected one character");
    step.stripChar = *cp;
    for (auto [key, out] :
         {std::pair<const char*, size_t*>{"start", &step.start}, {"stop", &step.stop}}) {
      const JsonValue* member = object.optional(key);
      std::optional<int64_t> count = member ? member->asInt() : std::nullopt;
      if (!count || *count < 0 || *count > 1000000) {
        return reporter.at(member ? *member : value, object.memberPath(key),
                           "expected a count of characters");
      }
      *out = static_cast<size_t>(*count);
    }
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::kMetaspace;
    TFC_RETURN_IF_ERROR(object.string("replacement", &step.replacement));
    if (!singleChar(step.replacement)) {
      return reporter.at(*object.optional("replacement"), path + ".replacement",
                         "expected one character");
    }
    TFC_RETURN_IF_ERROR(parsePrependScheme(object, &step.prependScheme));
  } else {
    return reporter.unsupported(value, path + ".type",
                                "decoder " + quote(type) +
                                    " is not supported (supported: ByteLevel, Metaspace, "
                                    "Replace, ByteFallback, Fuse, Strip, Sequence)");
  }
  impl->decoder.push_back(std::move(step));
  return Status();
}

Status Parser::parsePostProcessor(const JsonValue& value, const std::string& path) {
  if (value.isNull()) return Status();
  TFC_RETURN_IF_ERROR(checkObject(reporter, value, path));
  Object object{reporter, value, path};
  std::string type;
  TFC_RETURN_IF_ERROR(object.type(&type));
  if (type == "Sequence") {
    TFC_RETURN_IF_ERROR(parseSequence(object, "processors", &Parser::parsePostProcessor));
  } else if (type == "ByteLevel") {
    // Only offsets: nothing for ids.
  } else if (type == "RobertaProcessing") {
    // "cls": ["<s>", 0]
    const JsonValue* cls = object.optional("cls");
    if (cls == nullptr || cls->kind != JsonValue::kArray || cls->items.size() != 2 ||
        !cls->items[1].asInt()) {
      return reporter.at(cls ? *cls : value, path + ".cls", "expected [token, id]");
    }
    int64_t id = *cls->items[1].asInt();
    if (id < 0 || id >= static_cast<int64_t>(impl->idToToken.size()) || !impl->hasToken[id]) {
      return reporter.at(cls->items[1], path + ".cls[1]",
                         "id " + std::to_string(id) + " is not in the vocabulary");
    }
    impl->bos = static_cast<int32_t>(id);
  } else if (type == "TemplateProcessing") {
    // "single": [{"SpecialToken": {"id": "<s>", ...}}, {"Sequence": {"id": "A", ...}}],
    // "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}
    const JsonValue* single = object.optional("single");
    if (single == nullptr || single->kind != JsonValue::kArray) {
      return reporter.at(single ? *single : value, path + ".single", "expected an array");
    }
    if (single->items.empty()) return Status();
    const JsonValue* special = single->items[0].get("SpecialToken");
    if (special == nullptr) return Status();  // the text comes first: no BOS
    std::string name;
    Object specialObject{reporter, *special, path + ".single[0].SpecialToken"};
    TFC_RETURN_IF_ERROR(specialObject.string("id", &name));
    const JsonValue* specials = object.optional("special_tokens");
    const JsonValue* entry = specials ? specials->get(name) : nullptr;
    const JsonValue* ids = entry ? entry->get("ids") : nullptr;
    if (ids == nullptr || ids->kind != JsonValue::kArray || ids->items.size() != 1 ||
        !ids->items[0].asInt()) {
      return reporter.at(specials ? *specials : value, path + ".special_tokens",
                         "expected " + quote(name) + " with one id in \"ids\"");
    }
    int64_t id = *ids->items[0].asInt();
    if (id < 0 || id >= static_cast<int64_t>(impl->idToToken.size()) || !impl->hasToken[id]) {
      return reporter.at(ids->items[0], path + ".special_tokens[" + quote(name) + "].ids[0]",
                         "id " + std::to_string(id) + " is not in the vocabulary");
    }
    impl->bos = static_cast<int32_t>(id);
  } else {
    return reporter.unsupported(value, path + ".type",
                                "post-processor " + quote(type) +
                                    " is not supported (supported: TemplateProcessing, "
                                    "ByteLevel, RobertaProcessing, Sequence)");
  }
  return Status();
}

// Parses |text| (the file |name|) into |root|, which must be an object.
Status parseJsonObject(std::string_view text, const std::string& name, const Reporter& reporter,
                       JsonValue* root) {
  std::string error;
  size_t offset = 0;
  if (!internal::parseJson(text, root, &error, &offset)) {
    return Status::error(TFC_DATA_LOSS, "%s:%s: invalid JSON: %s", name.c_str(),
                         internal::lineColumn(text, offset).c_str(), error.c_str());
  }
  return checkObject(reporter, *root, "(top level)");
}

// The token named by a tokenizer_config.json's eos_token: a string or {"content": ...}.
Status eosFromTokenizerConfig(const HfTokenizer::Files& files, const HfTokenizer::Impl& impl,
                              std::optional<int32_t>* out) {
  if (files.tokenizerConfig.empty()) return Status();
  Reporter reporter{files.tokenizerConfig, files.tokenizerConfigName};
  JsonValue root;
  TFC_RETURN_IF_ERROR(
      parseJsonObject(files.tokenizerConfig, files.tokenizerConfigName, reporter, &root));
  const JsonValue* eos = root.get("eos_token");
  if (eos == nullptr || eos->isNull()) return Status();
  std::string token;
  if (eos->kind == JsonValue::kString) {
    token = eos->text;
  } else if (eos->kind == JsonValue::kObject) {
    Object eosObject{reporter, *eos, "eos_token"};
    TFC_RETURN_IF_ERROR(eosObject.string("content", &token));
  } else {
    return reporter.at(*eos, "eos_token", "expected a string or {\"content\": ...}");
  }
  auto it = impl.vocab.find(token);
  if (it == impl.vocab.end()) {
    return reporter.at(*eos, "eos_token", quote(token) + " is not a token of the tokenizer");
  }
  *out = it->second;
  return Status();
}

// generation_config.json's eos_token_id: an id or a list of them (the first stops).
Status eosFromGenerationConfig(const HfTokenizer::Files& files, const HfTokenizer::Impl& impl,
                               std::optional<int32_t>* out) {
  const int64_t vocabSize = static_cast<int64_t>(impl.idToToken.size());
  if (files.generationConfig.empty()) return Status();
  Reporter reporter{files.generationConfig, files.generationConfigName};
  JsonValue root;
  TFC_RETURN_IF_ERROR(
      parseJsonObject(files.generationConfig, files.generationConfigName, reporter, &root));
  const JsonValue* eos = root.get("eos_token_id");
  if (eos == nullptr || eos->isNull()) return Status();
  const JsonValue* first =
      eos->kind == JsonValue::kArray && !eos->items.empty() ? &eos->items[0] : eos;
  std::optional<int64_t> id = first->asInt();
  if (!id || *id < 0 || *id >= vocabSize || !impl.hasToken[*id]) {
    return reporter.at(*first, "eos_token_id",
                       "expected the id of a token, in [0, " + std::to_string(vocabSize) + ")");
  }
  *out = static_cast<int32_t>(*id);
  return Status();
}

}  // namespace

StatusOr<HfTokenizer> HfTokenizer::fromContents(const Files& files) {
  auto impl = std::make_unique<Impl>();
  Parser parser{Reporter{files.tokenizerJson, files.tokenizerJsonName}, impl.get()};
  const Reporter& reporter = parser.reporter;
  JsonValue root;
  TFC_RETURN_IF_ERROR(parseJsonObject(files.tokenizerJson, files.tokenizerJsonName, reporter, &root));
  const JsonValue* model = root.get("model");
  if (model == nullptr) return reporter.at(root, "(top level)", "missing \"model\"");
  TFC_RETURN_IF_ERROR(parser.parseModel(*model));
  if (const JsonValue* added = root.get("added_tokens"); added != nullptr && !added->isNull()) {
    TFC_RETURN_IF_ERROR(parser.parseAddedTokens(*added));
  }
  if (const JsonValue* normalizer = root.get("normalizer")) {
    TFC_RETURN_IF_ERROR(parser.parseNormalizer(*normalizer, "normalizer"));
  }
  if (const JsonValue* preTokenizer = root.get("pre_tokenizer")) {
    TFC_RETURN_IF_ERROR(parser.parsePreTokenizer(*preTokenizer, "pre_tokenizer"));
  }
  const JsonValue* decoder = root.get("decoder");
  if (decoder == nullptr || decoder->isNull()) {
    return reporter.unsupported(decoder ? *decoder : root, "decoder",
                                "a tokenizer without a decoder is not supported (decoding "
                                "would join tokens by spaces)");
  }
  TFC_RETURN_IF_ERROR(parser.parseDecoder(*decoder, "decoder"));
  if (const JsonValue* post = root.get("post_processor")) {
    TFC_RETURN_IF_ERROR(parser.parsePostProcessor(*post, "post_processor"));
  }
  if (impl->idToToken.empty()) return reporter.at(*model, "model.vocab", "empty vocabulary");

  // Normalized added tokens are matched in normalized text, so by their normalized form.
  // `tokenizers` also decodes them from that form.
  for (AddedToken& token : impl->addedTokens) {
    if (!token.normalized) continue;
    token.content = impl->normalize(token.content);
    impl->idToToken[token.id] = token.content;
  }
  // Longest first, so that the first one matching at a position is the longest there.
  std::stable_sort(
      impl->addedTokens.begin(), impl->addedTokens.end(),
      [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  impl->addedTokens.erase(
      std::remove_if(impl->addedTokens.begin(), impl->addedTokens.end(),
                     [](const AddedToken& token) { return token.content.empty(); }),
      impl->addedTokens.end());
  for (size_t i = 0; i < impl->addedTokens.size(); ++i) {
    const AddedToken& token = impl->addedTokens[i];
    impl->addedByFirstByte[token.normalized][static_cast<unsigned char>(token.content[0])]
        .push_back(static_cast<uint32_t>(i));
  }

  TFC_RETURN_IF_ERROR(eosFromTokenizerConfig(files, *impl, &impl->eos));
  if (!impl->eos) {
    TFC_RETURN_IF_ERROR(eosFromGenerationConfig(files, *impl, &impl->eos));
  }
  if (!impl->eos) {
    // By the tokens' contents as the file writes them (|vocab| has added tokens unnormalized).
    for (const char* name : {"<|endoftext|>", "</s>", "<|end_of_text|>", "<|im_end|>"}) {
      auto it = impl->vocab.find(name);
      if (it != impl->vocab.end()) {
        impl->eos = it->second;
        break;
      }
    }
  }

  // nextSplit's condition (see there).
  bool splitsPieces = false, prependsText = false;
  for (const PreTokenizerStep& step : impl->preTokenizer) {
    if (step.kind == PreTokenizerStep::kSplit ||
        (step.kind == PreTokenizerStep::kByteLevel && step.useRegex)) {
      splitsPieces = true;
    }
    if ((step.kind == PreTokenizerStep::kByteLevel && step.addPrefixSpace) ||
        (step.kind == PreTokenizerStep::kMetaspace &&
         step.prependScheme != PrependScheme::kNever)) {
      prependsText = true;
    }
  }
  for (const NormalizerStep& step : impl->normalizer) {
    if (step.kind == NormalizerStep::kPrepend ||
        (step.kind == NormalizerStep::kReplace && step.pattern.find('\n') != std::string::npos)) {
      prependsText = true;
    }
  }
  bool addedTokensSafe =
      std::none_of(impl->addedTokens.begin(), impl->addedTokens.end(), [](const AddedToken& token) {
        return token.lstrip || token.content.find('\n') != std::string::npos;
      });
  impl->splittable = splitsPieces && !prependsText && addedTokensSafe;
  return HfTokenizer(std::move(impl));
}

StatusOr<HfTokenizer> HfTokenizer::load(const std::string& path) {
  struct stat info;
  bool isDirectory = ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
  std::string dir = isDirectory ? path : path.substr(0, path.find_last_of('/') + 1);
  if (!dir.empty() && dir.back() != '/') dir += '/';
  Files files;
  files.tokenizerJsonName = isDirectory ? dir + "tokenizer.json" : path;
  TFC_ASSIGN_OR_RETURN(
      internal::FileContents json,
      internal::readFile(files.tokenizerJsonName, internal::FileMapping::kReadOnly));
  files.tokenizerJson = std::string_view(reinterpret_cast<const char*>(json.data), json.size);
  // The configuration files next to it, when they exist.
  internal::FileContents configs[2];
  std::string* names[2] = {&files.tokenizerConfigName, &files.generationConfigName};
  std::string_view* contents[2] = {&files.tokenizerConfig, &files.generationConfig};
  const char* baseNames[2] = {"tokenizer_config.json", "generation_config.json"};
  for (int i = 0; i < 2; ++i) {
    *names[i] = dir + baseNames[i];
    if (::stat(names[i]->c_str(), &info) != 0) continue;
    TFC_ASSIGN_OR_RETURN(configs[i],
                         internal::readFile(*names[i], internal::FileMapping::kReadOnly));
    *contents[i] =
        std::string_view(reinterpret_cast<const char*>(configs[i].data), configs[i].size);
  }
  return fromContents(files);
}

}  // namespace tfc
