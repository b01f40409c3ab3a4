// tfc-run tokenize: text files to the token file that `tfc-run train --data` reads.
//
// The output is llm.c's .bin (tfc/runtime/token_data.hpp): a header of 256 little-endian int32
// (magic 20240520, version 1 for uint16 ids or 2 for uint32 ids, the token count, zeros),
// then the ids. It names its own width and length, so train needs no --data-dtype, and
// llm.c's and nanoGPT-style readers take it as well.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "print.hpp"
#include "tfc/runtime/file.hpp"
#include "tfc/runtime/token_data.hpp"
#include "tfc/runtime/tokenizer.hpp"

namespace tfc::run {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "token files are little-endian; ids are copied in host order");

// Text is encoded in pieces of about this size, so that progress can be shown and the
// tokenizer's working memory (several words per character of its input) stays bounded.
constexpr size_t kPieceBytes = size_t{1} << 20;
constexpr double kProgressSeconds = 2.0;

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The file's whole contents ("-": standard input); errors name the file.
Status readInput(const std::string& path, std::string* out) {
  bool isStdin = path == "-";
  FILE* file = stdin;
  if (!isStdin) {
    // A named FIFO or device is refused without blocking; standard input may be a pipe.
    TFC_ASSIGN_OR_RETURN(int fd, openRegularFileForRead(path));
    file = ::fdopen(fd, "rb");
    if (file == nullptr) {
      int error = errno;
      ::close(fd);
      return Status::error(TFC_IO_ERROR, "%s: cannot open: %s", path.c_str(),
                           std::strerror(error));
    }
  }
  // As tfc does: say why nothing happens rather than wait in silence.
  if (isStdin && ::isatty(STDIN_FILENO)) {
    print(stderr, "tokenize: reading standard input (end it with Ctrl-D)\n");
  }
  struct stat info;
  // The whole text is held in memory: a file larger than memory (or than ulimit -v) is an
  // error naming it, not an uncaught std::bad_alloc.
  auto tooLarge = [&](uint64_t bytes) {
    if (!isStdin) std::fclose(file);
    return Status::error(TFC_OUT_OF_MEMORY,
                         "%s: %llu bytes do not fit in memory (tokenize reads its input "
                         "whole; split the text into smaller files)",
                         isStdin ? "standard input" : path.c_str(),
                         static_cast<unsigned long long>(bytes));
  };
  if (!isStdin && ::fstat(fileno(file), &info) == 0 && S_ISREG(info.st_mode)) {
    try {
      out->reserve(static_cast<size_t>(info.st_size));
    } catch (const std::exception&) {  // bad_alloc, or length_error past max_size()
      return tooLarge(static_cast<uint64_t>(info.st_size));
    }
  }
  out->clear();
  std::vector<char> buffer(kPieceBytes);
  size_t got = 0;
  errno = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), file)) > 0) {
    try {
      out->append(buffer.data(), got);
    } catch (const std::exception&) {
      return tooLarge(static_cast<uint64_t>(out->size()) + got);
    }
  }
  int error = std::ferror(file) ? errno : 0;
  if (!isStdin) std::fclose(file);
  if (error != 0) {
    return Status::error(TFC_IO_ERROR, "%s: cannot read: %s",
                         isStdin ? "standard input" : path.c_str(), std::strerror(error));
  }
  return Status();
}

// 1-based line of byte |offset| in |text|.
size_t lineOf(std::string_view text, size_t offset) {
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

// Refuses text that is not UTF-8 when the tokenizer needs it: the file, the offset, the
// bytes there and what to do.
Status checkUtf8(const std::string& name, std::string_view text, const Tokenizer& tokenizer) {
  // The byte tokenizer takes any bytes. A BPE tokenizer would encode each stray byte as its
  // own token (tokenizer.hpp), which in a text corpus means a wrong encoding (Latin-1,
  // UTF-16), not text a model should learn.
  if (dynamic_cast<const ByteTokenizer*>(&tokenizer) != nullptr) return Status();
  std::optional<size_t> bad = Gpt2Tokenizer::firstInvalidUtf8(text);
  if (!bad) return Status();
  std::string bytes;
  for (size_t i = *bad; i < text.size() && i < *bad + 4; ++i) {
    fmt::format_to(std::back_inserter(bytes), "{}{:02x}", i == *bad ? "" : " ",
                   static_cast<unsigned char>(text[i]));
  }
  return Status::error(TFC_INVALID_ARGUMENT,
                       "%s: not valid UTF-8 at byte offset %zu (line %zu; bytes %s): the %s "
                       "tokenizer reads UTF-8 text; convert the file (iconv -f latin1 -t utf-8) "
                       "or use --tokenizer bytes",
                       name.c_str(), *bad, lineOf(text, *bad), bytes.c_str(),
                       std::string(tokenizer.kind()).c_str());
}

// The token file being built: an llm.c header's room, then the ids, each |width| bytes.
struct TokenBuffer {
  size_t width = 2;
  std::vector<uint8_t> bytes = std::vector<uint8_t>(kLlmcHeaderBytes);

  size_t count() const { return (bytes.size() - kLlmcHeaderBytes) / width; }
  void append(const std::vector<int32_t>& ids) {
    size_t at = bytes.size();
    bytes.resize(at + ids.size() * width);
    for (int32_t id : ids) {
      if (width == 2) {
        uint16_t value = static_cast<uint16_t>(id);
        std::memcpy(&bytes[at], &value, 2);
      } else {
        uint32_t value = static_cast<uint32_t>(id);
        std::memcpy(&bytes[at], &value, 4);
      }
      at += width;
    }
  }
};

// Writes an llm.c .bin of |count| ids at |tokens|, whose |kLlmcHeaderBytes| bytes before
// are the caller's to overwrite with the header.
Status writeTokenFile(const std::string& path, uint8_t* tokens, size_t count, size_t width) {
  if (count > static_cast<size_t>(INT32_MAX)) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "%s: %zu tokens are more than an llm.c header can count (2^31 - 1); "
                         "tokenize the text in parts",
                         path.c_str(), count);
  }
  int32_t header[256] = {kLlmcMagic, width == 2 ? 1 : 2, static_cast<int32_t>(count)};
  static_assert(sizeof(header) == kLlmcHeaderBytes, "llm.c's header is 256 int32");
  uint8_t* start = tokens - kLlmcHeaderBytes;
  std::memcpy(start, header, sizeof(header));
  return writeFileAtomically(path, start, kLlmcHeaderBytes + count * width);
}

// The default --val-output: the last "train" of the file name replaced by "val", else
// NAME.val.bin.
std::string defaultValPath(const std::string& output) {
  size_t slash = output.rfind('/');
  size_t base = slash == std::string::npos ? 0 : slash + 1;
  size_t train = output.rfind("train");
  if (train != std::string::npos && train >= base) {
    return output.substr(0, train) + "val" + output.substr(train + 5);
  }
  std::string stem = endsWith(output, ".bin") ? output.substr(0, output.size() - 4) : output;
  return stem + ".val.bin";
}

struct Options {
  std::string tokenizer, output, valOutput;
  double valFraction = 0;
};

// Checks the arguments; a usage message, or "" when they are fine.
std::string parseOptions(const Args& args, Options* options) {
  if (args.positional.empty()) {
    return "missing IN.txt (text files to tokenize, - for standard input)";
  }
  if (std::count(args.positional.begin(), args.positional.end(), "-") > 1) {
    return "standard input (-) can be given once";
  }
  if (!args.has("--tokenizer")) return "missing --tokenizer DIR|FILE.json|bytes";
  if (!args.has("--output")) return "missing -o FILE.bin (where to write the tokens)";
  options->tokenizer = args.get("--tokenizer");
  options->output = args.get("--output");
  std::string fraction = args.get("--val-fraction", "0");
  if (!parseDouble(fraction, &options->valFraction) || options->valFraction < 0 ||
      options->valFraction >= 1) {
    return "--val-fraction '" + fraction +
           "' is not a number in [0, 1) (0.1 holds out the last 10% of the tokens)";
  }
  if (args.has("--val-output") && options->valFraction == 0) {
    return "--val-output needs --val-fraction F > 0";
  }
  if (options->valFraction > 0) {
    options->valOutput = args.get("--val-output", defaultValPath(options->output));
  }
  for (const std::string* path : {&options->output, &options->valOutput}) {
    // train would read such a name as NumPy's format (tfc/runtime/token_data.hpp).
    if (endsWith(*path, ".npy")) {
      return "'" + *path + "': tokenize writes llm.c .bin files, not .npy";
    }
  }
  if (options->valOutput == options->output) {
    return "--val-output is the same file as -o (" + options->output + ")";
  }
  return "";
}

// Reads, checks and encodes |paths| in order into |buffer|, the end-of-text token (if any)
// between files; adds the bytes read to |*bytes|. Reports progress on big inputs.
Status encodeInputs(const std::vector<std::string>& paths, const Tokenizer& tokenizer,
                    TokenBuffer* buffer, uint64_t* bytes) {
  Clock::time_point start = Clock::now(), lastReport = start;
  std::optional<int32_t> eos = tokenizer.eosId();
  std::string text;
  for (size_t f = 0; f < paths.size(); ++f) {
    std::string name = paths[f] == "-" ? "standard input" : paths[f];
    TFC_RETURN_IF_ERROR(readInput(paths[f], &text));
    if (text.empty()) {
      return Status::error(TFC_INVALID_ARGUMENT, "%s: empty, nothing to tokenize", name.c_str());
    }
    TFC_RETURN_IF_ERROR(checkUtf8(name, text, tokenizer));
    // Documents are joined by the end-of-text token, as nanoGPT's openwebtext preparation
    // does, so that the model learns where one ends.
    if (eos && buffer->count() > 0) buffer->append({*eos});
    std::string_view view(text);
    for (size_t at = 0; at < view.size();) {
      size_t cut = tokenizer.nextSplit(view, at + kPieceBytes);
      buffer->append(tokenizer.encode(view.substr(at, cut - at)));
      at = cut;
      if (at < view.size() && secondsSince(lastReport) >= kProgressSeconds) {
        lastReport = Clock::now();
        std::string which = paths.size() > 1 ? " (file " + std::to_string(f + 1) + " of " +
                                                   std::to_string(paths.size()) + ")"
                                             : "";
        print(stderr, "tokenize: {}{}: {:.0f}% ({} of {}), {} tokens so far, {:.1f} MiB/s\n", name,
              which, 100.0 * static_cast<double>(at) / static_cast<double>(view.size()),
              formatBytes(at), formatBytes(view.size()), buffer->count(),
              static_cast<double>(*bytes + at) / 1048576.0 / secondsSince(start));
      }
    }
    *bytes += text.size();
  }
  return Status();
}

// Writes the first |trainCount| ids of |buffer| to |output| and the rest, if any, to
// |valOutput|, saying what was written.
Status writeOutputs(TokenBuffer& buffer, size_t trainCount, const Options& options) {
  const size_t total = buffer.count(), width = buffer.width;
  const char* format = width == 2 ? "llm.c .bin version 1, uint16" : "llm.c .bin version 2, uint32";
  uint8_t* tokens = buffer.bytes.data() + kLlmcHeaderBytes;
  // The validation file first: the training file, the one named by -o, then appears only
  // when both were written.
  if (trainCount < total) {
    size_t valCount = total - trainCount;
    std::vector<uint8_t> val(kLlmcHeaderBytes + valCount * width);
    std::memcpy(val.data() + kLlmcHeaderBytes, tokens + trainCount * width, valCount * width);
    TFC_RETURN_IF_ERROR(
        writeTokenFile(options.valOutput, val.data() + kLlmcHeaderBytes, valCount, width));
    print(stderr, "wrote {}: {} validation tokens ({})\n", options.valOutput, valCount, format);
  }
  TFC_RETURN_IF_ERROR(writeTokenFile(options.output, tokens, trainCount, width));
  print(stderr, "wrote {}: {} {}tokens ({})\n", options.output, trainCount,
        trainCount < total ? "training " : "", format);
  return Status();
}

int runTokenize(const Invocation& invocation) {
  const Args& args = invocation.args;
  Options options;
  std::string usage = parseOptions(args, &options);
  if (!usage.empty()) return usageError(invocation.command, usage);
  if (!options.valOutput.empty() && !args.has("--val-output")) {
    // The default --val-output is derived from -o, so the dispatcher's check (checkPaths)
    // has not seen it: val.bin may well be an input (tokenize val.bin -o train.bin).
    std::vector<NamedFile> inputs = {{"--tokenizer", options.tokenizer, ""}};
    for (const std::string& path : args.positional) inputs.push_back({"the input", path, ""});
    Status distinct = checkDistinctFiles(
        inputs, {{"-o", options.output, ""}, {"the default --val-output", options.valOutput, ""}});
    if (!distinct.ok()) return fail(distinct);
  }
  auto tokenizer = Tokenizer::load(options.tokenizer);
  if (!tokenizer.ok()) {
    return fail(std::string(tokenizer.status().message()) +
                " (--tokenizer takes 'bytes', a Hugging Face tokenizer.json or its folder, or a "
                "folder with GPT-2's vocab.json and merges.txt; see tfc-run tokenize --help)");
  }
  const Tokenizer& tok = **tokenizer;

  Clock::time_point start = Clock::now();
  TokenBuffer buffer;
  buffer.width = tok.vocabSize() <= 65536 ? 2 : 4;
  uint64_t bytes = 0;
  Status status = encodeInputs(args.positional, tok, &buffer, &bytes);
  if (!status.ok()) return fail(status);
  const size_t total = buffer.count();  // > 0: every input is non-empty

  // nanoGPT's split: train = data[:int(n * (1 - f))], val = the rest.
  size_t trainCount = total;
  if (options.valFraction > 0) {
    trainCount =
        static_cast<size_t>(std::floor(static_cast<double>(total) * (1 - options.valFraction)));
    if (trainCount == 0 || trainCount == total) {
      return fail(fmt::format("--val-fraction {:g} of {} tokens leaves {} tokens; give more text "
                              "or another fraction",
                              options.valFraction, total,
                              trainCount == 0 ? "no training" : "no validation"));
    }
  }
  const size_t files = args.positional.size();
  print(stderr,
        "tokenize: {} file{}, {}, {} tokenizer (vocab {}): {} tokens, {:.3f} tokens/byte, "
        "{:.2f} s\n",
        files, files == 1 ? "" : "s", formatBytes(bytes), tok.kind(), tok.vocabSize(), total,
        static_cast<double>(total) / static_cast<double>(bytes), secondsSince(start));
  if (files > 1 && tok.eosId()) {
    auto text = tok.decode({*tok.eosId()});
    print(stderr, "tokenize: files joined by the end-of-text token {} (id {})\n",
          text.ok() ? text->c_str() : "", *tok.eosId());
  } else if (files > 1) {
    print(stderr,
          "tokenize: files joined as they are (the {} tokenizer has no end-of-text token)\n",
          tok.kind());
  }
  status = writeOutputs(buffer, trainCount, options);
  return status.ok() ? 0 : fail(status);
}

}  // namespace

const Command kTokenizeCommand = {
    "tokenize",
    "encode text files into a token file for train (no model needed)",
    R"(usage: tfc-run tokenize --tokenizer DIR|FILE.json|bytes IN.txt... -o train.bin
                        [--val-fraction F] [--val-output val.bin]

Reads the text files (- for standard input), encodes them with the tokenizer and writes the
token file that `tfc-run MODEL.so train --data` reads. Each input is read whole, one at a
time; the files are written atomically (complete or not at all).

options:
  --tokenizer SPEC    bytes: one token per byte (ids 0..255, any input), for byte-level
                      models (vocab_size=256): character-level training like nanoGPT's
                      shakespeare_char, with byte values as ids;
                      FILE.json or DIR with tokenizer.json: a Hugging Face tokenizer (BPE:
                      byte-level like GPT-2, LLaMA 3, Qwen2, or SentencePiece-style like
                      LLaMA 2, Mistral; tokenizer_config.json next to it gives the
                      end-of-text token); other kinds (WordPiece, Unigram) are refused;
                      DIR without tokenizer.json: a GPT-2 BPE tokenizer, vocab.json and
                      merges.txt.
                      Under a BPE tokenizer the text must be UTF-8: a file that is not is
                      refused with the byte offset of the first bad sequence.
  -o, --output FILE   the token file to write (required)
  --val-fraction F    hold out the last F of the tokens (0 <= F < 1; default 0: none) in
                      a validation file, as nanoGPT's prepare scripts do with 0.1: train
                      gets the first floor(n * (1 - F)) tokens, validation the rest
  --val-output FILE   the validation file (default: the -o name with its last "train"
                      replaced by "val", data/train.bin -> data/val.bin, else NAME.val.bin,
                      tokens.bin -> tokens.val.bin)

Files are joined in the order given. When the tokenizer has an end-of-text token (GPT-2's
<|endoftext|>, id 50256; LLaMA's </s>), it is put between files, as nanoGPT's openwebtext preparation
puts it between documents; the byte tokenizer has none and joins them as they are.
"<|endoftext|>" written in the text is that one token too, as are a tokenizer.json's
added tokens. No BOS token is added.

output format: llm.c's .bin: 256 little-endian int32 (magic 20240520, version 1 when the
vocabulary fits uint16 (<= 65536 tokens) or 2 for uint32, the token count, zeros), then
the token ids, little-endian. train recognizes it by its magic (no --data-dtype needed);
in NumPy: np.fromfile(f, np.uint16, offset=1024) for version 1.

The GPT-2 files: vocab.json and merges.txt from Hugging Face's gpt2 model repository
(https://huggingface.co/openai-community/gpt2/tree/main), or OpenAI's encoder.json and
vocab.bpe, the same contents under other names (rename them). vocab.json maps each token to
its id (50257 of them), bytes written as GPT-2's printable stand-ins (a space is U+0120:
"\u0120the" is " the"); merges.txt lists the merges "a b", one a line by priority, after a
"#version" line. A model repository's tokenizer.json (with tokenizer_config.json) is the
other way. The model's vocab_size must cover the ids (train checks them): 256 for bytes,
50257 for GPT-2. See docs/tokenizers.md.

A summary goes to standard error: files, bytes, tokens, tokens per byte, the train and
validation counts and the time; big inputs also report progress every few seconds.

examples:
  # nanoGPT's shakespeare_char workflow on a byte-level model:
  tfc-run tokenize --tokenizer bytes input.txt -o data/train.bin --val-fraction 0.1
  tfc-trace gpt2 --set vocab_size=256 -o g.mlir && tfc g.mlir --optimizer=adamw -o g.so
  tfc-run g.so train --init-seed 0 --data data/train.bin --eval-data data/val.bin --steps 2000

  # GPT-2's tokenizer, several documents, <|endoftext|> between them:
  mkdir gpt2-tokenizer && cd gpt2-tokenizer
  curl -LO https://huggingface.co/openai-community/gpt2/resolve/main/vocab.json
  curl -LO https://huggingface.co/openai-community/gpt2/resolve/main/merges.txt
  cd .. && tfc-run tokenize --tokenizer gpt2-tokenizer docs/*.txt -o owt_train.bin \
      --val-fraction 0.0005
  cat notes.txt | tfc-run tokenize --tokenizer bytes - -o notes.bin
)",
    false,
    {inputOption("--tokenizer"),
     outputOption("--output", "-o"),
     {"--val-fraction", nullptr, true, false},
     outputOption("--val-output")},
    runTokenize,
    ValueKind::kInput,
    "the input",
};

}  // namespace tfc::run
