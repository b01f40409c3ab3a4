// Tokenizers: text to token ids and back (the byte tokenizer, GPT-2's BPE, Hugging Face
// tokenizer.json BPE).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "tfc/runtime/tokenizer.hpp"

namespace tfc::python {

void bindTokenizer(py::module_& m) {
  py::class_<Tokenizer, std::shared_ptr<Tokenizer>>(
      m, "Tokenizer", "Text to token ids and back. Safe to use from several threads.")
      .def_static("load", [](py::handle specArg) {
        const std::string spec = fsPath(specArg, "Tokenizer.load: spec");
        auto loaded = [&] {
          py::gil_scoped_release release;
          return Tokenizer::load(spec);
        }();
        return std::shared_ptr<Tokenizer>(
            valueOrThrow(std::move(loaded), {spec, spec + "/vocab.json", spec + "/merges.txt"}));
      }, py::arg("spec"),
         "'bytes' for the byte tokenizer (token i is byte i), a Hugging Face tokenizer.json "
         "(BPE) or a folder with one, else a folder with a GPT-2 BPE tokenizer (vocab.json, "
         "merges.txt).")
      .def_property_readonly("kind", [](const Tokenizer& t) { return std::string(t.kind()); })
      .def_property_readonly("vocab_size", &Tokenizer::vocabSize)
      .def_property_readonly("eos_id", [](const Tokenizer& t) -> py::object {
        auto eos = t.eosId();
        return eos ? py::object(py::int_(*eos)) : py::object(py::none());
      }, "The end-of-text id that stops generation, or None.")
      .def_property_readonly("bos_id", [](const Tokenizer& t) -> py::object {
        auto bos = t.bosId();
        return bos ? py::object(py::int_(*bos)) : py::object(py::none());
      }, "The beginning-of-text id that generate() puts before a text prompt, or None.")
      .def("encode", [](const Tokenizer& t, py::handle text) {
        std::string bytes = textBytes(text, "tokenizer: text");
        std::vector<int32_t> ids;
        {
          py::gil_scoped_release release;
          ids = t.encode(bytes);
        }
        py::array_t<int32_t> result(static_cast<py::ssize_t>(ids.size()));
        std::copy(ids.begin(), ids.end(), result.mutable_data());
        return result;
      }, py::arg("text"), "The ids of `text` (str as UTF-8, or bytes) as an int32 array; "
                          "no BOS/EOS added.")
      .def("decode_bytes", [](const Tokenizer& t, py::handle ids) {
        std::vector<int32_t> list = tokenIds(ids, "tokenizer: ids");
        return py::bytes(valueOrThrow(t.decode(list)));
      }, py::arg("ids"), "The raw bytes of `ids` (may end inside a UTF-8 sequence).")
      .def("decode", [](const Tokenizer& t, py::handle ids) {
        std::string text = valueOrThrow(t.decodeText(tokenIds(ids, "tokenizer: ids")));
        return py::str(text);
      }, py::arg("ids"), "The text of `ids` as Hugging Face's decode gives it; invalid UTF-8 "
                         "becomes U+FFFD.")
      .def("__repr__", [](const Tokenizer& t) {
        return "<tfc.Tokenizer " + std::string(t.kind()) + ", vocab_size=" +
               std::to_string(t.vocabSize()) + ">";
      });
}

}  // namespace tfc::python
