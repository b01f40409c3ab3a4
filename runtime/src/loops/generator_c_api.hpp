// Internal: what the C APIs of tfc::Generator and tfc::BatchedGenerator share.
#ifndef TFC_RUNTIME_SRC_GENERATOR_C_API_HPP_
#define TFC_RUNTIME_SRC_GENERATOR_C_API_HPP_

#include <memory>
#include <utility>

#include "tfc/runtime/runtime.h"
#include "tfc/runtime/runtime.hpp"
#include "tfc/runtime/status.hpp"
#include "tfc/runtime/tokenizer.hpp"

namespace tfc::internal {

// A generator class G (Generator, BatchedGenerator) on |context| (which it keeps alive),
// with options->tokenizer loaded when given.
template <typename G>
StatusOr<G> createGeneratorFromC(tfc_context_t* context, const tfc_generator_options_t* options) {
  tfc_context_retain(context);
  TFC_ASSIGN_OR_RETURN(G generator, G::create(Context::adopt(context)));
  if (options != nullptr && options->tokenizer != nullptr) {
    TFC_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::load(options->tokenizer));
    generator.setTokenizer(std::move(tokenizer));
  }
  return generator;
}

}  // namespace tfc::internal

#endif  // TFC_RUNTIME_SRC_GENERATOR_C_API_HPP_
