// The committed BPE fixture (runtime/test/data/bpe_fixture.txt, written by
// bpe_reference.py) and the vocab.json / merges.txt writer, shared by the runtime's
// tokenizer tests and tfc-run's tokenize tests. Header-only, so that tests outside the
// runtime's test library can use it.
#ifndef TFC_RUNTIME_TEST_BPE_FIXTURE_HPP_
#define TFC_RUNTIME_TEST_BPE_FIXTURE_HPP_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tfc::testing::bpe {

inline void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline std::string fromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

inline std::vector<int32_t> parseIds(const std::string& text) {
  std::vector<int32_t> ids;
  std::istringstream in(text);
  int32_t id;
  while (in >> id) ids.push_back(id);
  return ids;
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

struct DecodeCase {
  std::vector<int32_t> ids;
  std::string text;  // Hugging Face's decode(): invalid UTF-8 replaced
};

struct Fixture {
  std::vector<std::pair<std::string, int32_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<Case> cases;
  std::vector<Case> gpt2Cases;
  std::vector<DecodeCase> decodes;
  std::vector<DecodeCase> gpt2Decodes;
};

inline Fixture parseFixture(const std::string& path) {
  Fixture fixture;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::istringstream split(line);
    std::string field;
    while (std::getline(split, field, '\t')) fields.push_back(field);
    while (fields.size() < 3) fields.emplace_back();
    const std::string& kind = fields[0];
    if (kind == "vocab") {
      fixture.vocab.emplace_back(fromHex(fields[1]), std::stoi(fields[2]));
    } else if (kind == "merge") {
      fixture.merges.emplace_back(fromHex(fields[1]), fromHex(fields[2]));
    } else if (kind == "case") {
      fixture.cases.push_back({fromHex(fields[1]), parseIds(fields[2])});
    } else if (kind == "gpt2case") {
      fixture.gpt2Cases.push_back({fromHex(fields[1]), parseIds(fields[2])});
    } else if (kind == "decode") {
      fixture.decodes.push_back({parseIds(fields[1]), fromHex(fields[2])});
    } else if (kind == "gpt2decode") {
      fixture.gpt2Decodes.push_back({parseIds(fields[1]), fromHex(fields[2])});
    } else {
      ADD_FAILURE() << path << ": unknown line " << line;
    }
  }
  return fixture;
}

inline std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Writes vocab.json and merges.txt (with a "#version" line) into |dir|.
inline void writeTokenizerFiles(const std::string& dir,
                                const std::vector<std::pair<std::string, int32_t>>& vocab,
                                const std::vector<std::pair<std::string, std::string>>& merges) {
  std::string json = "{";
  for (size_t i = 0; i < vocab.size(); ++i) {
    json += (i ? ",\n  " : "\n  ") + jsonString(vocab[i].first) + ": " +
            std::to_string(vocab[i].second);
  }
  json += "\n}\n";
  writeFile(dir + "/vocab.json", json);
  std::string text = "#version: 0.2\n";
  for (const auto& merge : merges) text += merge.first + " " + merge.second + "\n";
  writeFile(dir + "/merges.txt", text);
}

}  // namespace tfc::testing::bpe

#endif  // TFC_RUNTIME_TEST_BPE_FIXTURE_HPP_
