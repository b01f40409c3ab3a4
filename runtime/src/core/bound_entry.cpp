#include "tfc/runtime/bound_entry.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tfc {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) text += (i ? ", " : "") + items[i];
  return text;
}

std::string describeList(const tfc_tensor_desc_t* descs, int32_t count) {
  std::vector<std::string> items;
  for (int32_t i = 0; i < count; ++i) {
    items.push_back(std::string(descs[i].name) + " " +
                    tfc_dtype_name(static_cast<tfc_dtype_t>(descs[i].dtype)) +
                    formatShape(shapeOf(descs[i])));
  }
  return joined(items);
}

std::string describeExpected(const std::string& name, const std::vector<TensorExpectation>& in,
                             const std::vector<TensorExpectation>& out) {
  auto list = [](const std::vector<TensorExpectation>& items) {
    std::vector<std::string> parts;
    for (const TensorExpectation& e : items) {
      parts.push_back(e.name + " " + tfc_dtype_name(e.dtype) + " rank " + std::to_string(e.rank));
    }
    return joined(parts);
  };
  return name + "(" + list(in) + ") -> (" + list(out) + ")";
}

// Whether |descs| are exactly |want| by name (any order), dtype and rank.
bool matches(const tfc_tensor_desc_t* descs, int32_t count,
             const std::vector<TensorExpectation>& want) {
  if (count != static_cast<int32_t>(want.size())) return false;
  for (const TensorExpectation& e : want) {
    const tfc_tensor_desc_t* found = std::find_if(
        descs, descs + count, [&](const tfc_tensor_desc_t& d) { return e.name == d.name; });
    if (found == descs + count || static_cast<tfc_dtype_t>(found->dtype) != e.dtype ||
        found->rank != e.rank) {
      return false;
    }
  }
  return true;
}

StatusOr<std::vector<HostTensor>> allocateZeroed(const tfc_tensor_desc_t* descs, int32_t count) {
  std::vector<HostTensor> tensors;
  tensors.reserve(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    TFC_ASSIGN_OR_RETURN(
        HostTensor tensor,
        HostTensor::allocate(static_cast<tfc_dtype_t>(descs[i].dtype), shapeOf(descs[i])));
    if (tensor.byteSize() > 0) std::memset(tensor.mutableData(), 0, tensor.byteSize());
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

tfc_tensor_ref_t refTo(HostTensor& tensor) {
  tfc_tensor_ref_t ref{};
  ref.dtype = tensor.dtype();
  ref.rank = static_cast<int32_t>(tensor.rank());
  ref.shape = tensor.shape().data();
  ref.data = tensor.mutableData();
  ref.byte_size = tensor.byteSize();
  return ref;
}

std::optional<size_t> findByName(const tfc_tensor_desc_t* descs, int32_t count,
                                 std::string_view name) {
  for (int32_t i = 0; i < count; ++i) {
    if (name == descs[i].name) return static_cast<size_t>(i);
  }
  return std::nullopt;
}

}  // namespace

std::string entrySignature(const tfc_entry_t& entry) {
  return std::string(entry.name) + "(" + describeList(entry.inputs, entry.num_inputs) + ") -> (" +
         describeList(entry.outputs, entry.num_outputs) + ")";
}

StatusOr<BoundEntry> BoundEntry::create(const Artifact& artifact, const std::string& name,
                                        Inputs inputs) {
  TFC_ASSIGN_OR_RETURN(int32_t index, artifact.findEntry(name));
  BoundEntry bound;
  bound.name_ = name;
  bound.index_ = index;
  bound.desc_ = &artifact.entry(index);
  bound.artifact_ = artifact;
  const tfc_entry_t& entry = *bound.desc_;
  if (inputs == Inputs::kAllocate) {
    TFC_ASSIGN_OR_RETURN(bound.inputs_, allocateZeroed(entry.inputs, entry.num_inputs));
    for (HostTensor& tensor : bound.inputs_) bound.inputRefs_.push_back(refTo(tensor));
  }
  TFC_ASSIGN_OR_RETURN(bound.outputs_, allocateZeroed(entry.outputs, entry.num_outputs));
  for (HostTensor& tensor : bound.outputs_) bound.outputRefs_.push_back(refTo(tensor));
  return bound;
}

StatusOr<BoundEntry> BoundEntry::create(const Artifact& artifact, const std::string& name,
                                        const std::vector<TensorExpectation>& inputs,
                                        const std::vector<TensorExpectation>& outputs,
                                        const std::string& user) {
  TFC_ASSIGN_OR_RETURN(int32_t index, artifact.findEntry(name));
  const tfc_entry_t& entry = artifact.entry(index);
  if (!matches(entry.inputs, entry.num_inputs, inputs) ||
      !matches(entry.outputs, entry.num_outputs, outputs)) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "entry '%s' does not have the signature %s needs: it is %s, %s "
                         "expects %s",
                         name.c_str(), user.c_str(), entrySignature(entry).c_str(), user.c_str(),
                         describeExpected(name, inputs, outputs).c_str());
  }
  return create(artifact, name);
}

std::optional<size_t> BoundEntry::findInput(std::string_view name) const {
  return findByName(desc_->inputs, desc_->num_inputs, name);
}

std::optional<size_t> BoundEntry::findOutput(std::string_view name) const {
  return findByName(desc_->outputs, desc_->num_outputs, name);
}

Status BoundEntry::setInput(size_t i, HostTensor tensor) {
  if (i >= inputs_.size()) {
    return Status::error(TFC_INVALID_ARGUMENT, "entry '%s' has %zu inputs; there is no input %zu",
                         name_.c_str(), inputs_.size(), i);
  }
  const tfc_tensor_desc_t& desc = desc_->inputs[i];
  auto dtype = static_cast<tfc_dtype_t>(desc.dtype);
  std::vector<int64_t> shape = shapeOf(desc);
  if (tensor.dtype() != dtype || tensor.shape() != shape) {
    return Status::error(TFC_INVALID_ARGUMENT,
                         "entry '%s' input '%s' is %s%s; the value given is %s%s", name_.c_str(),
                         desc.name, tfc_dtype_name(dtype), formatShape(shape).c_str(),
                         tfc_dtype_name(tensor.dtype()), formatShape(tensor.shape()).c_str());
  }
  inputs_[i] = std::move(tensor);
  inputRefs_[i] = refTo(inputs_[i]);
  return Status();
}

void BoundEntry::useInputs(const std::vector<TensorView>& views) {
  inputRefs_.clear();
  for (const TensorView& view : views) inputRefs_.push_back(tensorRef(view));
}

Status BoundEntry::call(Context& context) {
  return Status(tfc_context_call_index(context.get(), index_, inputRefs_.data(), inputRefs_.size(),
                                       outputRefs_.data(), outputRefs_.size()));
}

StatusOr<std::vector<HostTensor>> Context::call(const std::string& entry,
                                                const std::vector<TensorView>& inputs) {
  TFC_ASSIGN_OR_RETURN(BoundEntry bound,
                       BoundEntry::create(artifact(), entry, BoundEntry::Inputs::kCallerProvided));
  bound.useInputs(inputs);
  TFC_RETURN_IF_ERROR(bound.call(*this));
  return std::move(bound).takeOutputs();
}

}  // namespace tfc
