// Artifact (a compiled model and its description), Params (its weights) and Context (calls
// of its entry points with NumPy arrays). Locking: model.hpp.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model.hpp"
#include "tfc/runtime/roofline.hpp"
#include "tfc/runtime/weights.hpp"

namespace tfc::python {

namespace {

// A copy of a tensor description (parameter, state tensor, entry input or output), so that
// a spec stays valid as a plain Python value.
struct TensorSpec {
  std::string name;
  tfc_dtype_t dtype = TFC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::string init;
  bool frozen = false;

  explicit TensorSpec(const tfc_tensor_desc_t& desc)
      : name(desc.name),
        dtype(static_cast<tfc_dtype_t>(desc.dtype)),
        shape(shapeOf(desc)),
        init(desc.init != nullptr ? desc.init : ""),
        frozen((desc.flags & TFC_TENSOR_FROZEN) != 0) {}

  int64_t size() const {
    int64_t count = 1;
    for (int64_t dim : shape) count *= dim;
    return count;
  }
  // "tokens: int32[2, 8]"
  std::string signature() const {
    std::string text = name + ": " + dtypeName(dtype) + "[";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
  }
  std::string repr() const {
    std::string text = "TensorSpec(" + quote(name) + ", " + dtypeName(dtype) + ", " +
                       formatShape(shape.data(), static_cast<int32_t>(shape.size()));
    if (!init.empty()) text += ", init=" + quote(init);
    if (frozen) text += ", frozen=True";
    return text + ")";
  }
};

struct EntrySpec {
  std::string name;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  uint64_t arenaBytes = 0;
  uint64_t numKernels = 0;

  explicit EntrySpec(const tfc_entry_t& entry)
      : name(entry.name), arenaBytes(entry.arena_bytes), numKernels(entry.num_kernels) {
    for (int32_t i = 0; i < entry.num_inputs; ++i) inputs.emplace_back(entry.inputs[i]);
    for (int32_t i = 0; i < entry.num_outputs; ++i) outputs.emplace_back(entry.outputs[i]);
  }
  // "forward(tokens: int32[2, 8]) -> (logits: float32[2, 8, 256])"
  std::string signature() const {
    std::string text = name + "(";
    for (size_t i = 0; i < inputs.size(); ++i) text += (i ? ", " : "") + inputs[i].signature();
    text += ") -> (";
    for (size_t i = 0; i < outputs.size(); ++i) {
      text += (i ? ", " : "") + outputs[i].signature();
    }
    return text + ")";
  }
};

py::dict specDict(const tfc_tensor_desc_t* descs, int32_t count) {
  py::dict result;
  for (int32_t i = 0; i < count; ++i) result[py::str(descs[i].name)] = TensorSpec(descs[i]);
  return result;
}

std::string artifactRepr(const Artifact& artifact) {
  std::string text = "tfc.Artifact(" + quote(std::string(artifact.path())) + ")\n";
  text += "  target:   " + std::string(artifact.target()) + "\n";
  text += "  compiler: " + std::string(artifact.compilerVersion()) + "\n";
  text += "  hash:     " + std::string(artifact.moduleHash()) + "\n";
  for (int32_t i = 0; i < artifact.entryCount(); ++i) {
    text += std::string(i == 0 ? "  entries:  " : "            ") +
            EntrySpec(artifact.entry(i)).signature() + "\n";
  }
  int64_t elements = 0;
  for (int32_t i = 0; i < artifact.paramCount(); ++i) elements += TensorSpec(artifact.param(i)).size();
  text += "  params:   " + std::to_string(artifact.paramCount()) + " tensors, " +
          std::to_string(elements) + " elements\n";
  text += "  state:    " + std::to_string(artifact.stateCount()) + " tensors";
  return text;
}

bool overlaps(const py::array& a, const py::array& b) {
  auto begin = [](const py::array& x) { return reinterpret_cast<uintptr_t>(x.data()); };
  return a.nbytes() > 0 && b.nbytes() > 0 && begin(a) < begin(b) + b.nbytes() &&
         begin(b) < begin(a) + a.nbytes();
}

py::dict call(py::object selfObject, const std::string& entryName, py::args args,
              py::kwargs kwargs) {
  PyContext& self = selfObject.cast<PyContext&>();
  int32_t index = valueOrThrow(self.artifact.findEntry(entryName));
  const tfc_entry_t& entry = self.artifact.entry(index);
  std::string subject = std::string(self.artifact.path()) + ": entry " + quote(entry.name);
  auto inputNames = [&] {
    std::string names;
    for (int32_t i = 0; i < entry.num_inputs; ++i) names += (i ? ", " : "") + std::string(entry.inputs[i].name);
    return names;
  };
  if (args.size() > static_cast<size_t>(entry.num_inputs)) {
    throw py::value_error(subject + " takes " + std::to_string(entry.num_inputs) + " input" +
                          (entry.num_inputs == 1 ? "" : "s") + " (" + inputNames() + "), got " +
                          std::to_string(args.size()) + " positional");
  }
  // Gather every input by position or name before converting any.
  std::vector<py::handle> values(static_cast<size_t>(entry.num_inputs));
  for (size_t i = 0; i < args.size(); ++i) values[i] = args[i];
  for (auto item : kwargs) {
    std::string name = item.first.cast<std::string>();
    int32_t i = 0;
    while (i < entry.num_inputs && name != entry.inputs[i].name) ++i;
    if (i == entry.num_inputs) {
      throw py::value_error(subject + " has no input " + quote(name) + " (inputs: " +
                            inputNames() + ")");
    }
    if (values[static_cast<size_t>(i)]) {
      throw py::value_error(subject + " input " + quote(name) +
                            " is given both by position and by name");
    }
    values[static_cast<size_t>(i)] = item.second;
  }
  std::vector<py::array> inputs;
  for (int32_t i = 0; i < entry.num_inputs; ++i) {
    std::string what = subject + " input " + quote(entry.inputs[i].name);
    if (!values[static_cast<size_t>(i)]) throw py::value_error(what + " is missing");
    py::array input = inputArray(values[static_cast<size_t>(i)], entry.inputs[i], what);
    // The ABI forbids aliasing buffers; passing one array as two inputs (tokens and
    // targets) is natural in Python, so the later one becomes a copy.
    for (const py::array& earlier : inputs) {
      if (overlaps(earlier, input)) {
        input = input.attr("copy")();
        break;
      }
    }
    inputs.push_back(input);
  }
  std::vector<py::array> outputs;
  for (int32_t i = 0; i < entry.num_outputs; ++i) outputs.push_back(newArray(entry.outputs[i]));

  // Refs into |shapes|, which is sized first so that its vectors stay put.
  std::vector<std::vector<int64_t>> shapes(inputs.size() + outputs.size());
  std::vector<tfc_tensor_ref_t> inputRefs, outputRefs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputRefs.push_back(
        tensorRefOf(inputs[i], static_cast<tfc_dtype_t>(entry.inputs[i].dtype), shapes[i]));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputRefs.push_back(tensorRefOf(outputs[i],
                                     static_cast<tfc_dtype_t>(entry.outputs[i].dtype),
                                     shapes[inputs.size() + i]));
  }
  // The arrays stay referenced by |inputs| and |outputs| while the GIL is released.
  Status status = withoutGil(
      [&] {
        return Status(tfc_context_call_index(self.context.get(), index, inputRefs.data(),
                                             inputRefs.size(), outputRefs.data(),
                                             outputRefs.size()));
      },
      self.mutex, self.params->mutex);
  check(status);
  py::dict result;
  for (int32_t i = 0; i < entry.num_outputs; ++i) {
    result[py::str(entry.outputs[i].name)] = outputs[static_cast<size_t>(i)];
  }
  return result;
}

py::dict costDict(const KernelCost& cost, bool kernel) {
  py::dict row;
  if (kernel) {
    row["name"] = cost.name;
    row["ops"] = cost.ops;
  }
  row["kind"] = cost.kind;
  row["launches"] = cost.launches;
  row["seconds"] = cost.seconds;
  row["flops"] = cost.flops;
  row["bytes"] = cost.bytes;
  row["floor_seconds"] = cost.floorSeconds;
  row["regime"] = cost.regime;
  return row;
}

// Context.kernel_profile: the library's roofline model over the context's kernel times.
py::dict kernelProfile(PyContext& self, const std::string& entryName,
                       std::optional<double> peakGflops, std::optional<double> bandwidthGbs) {
  int32_t index = valueOrThrow(self.artifact.findEntry(entryName));
  const tfc_entry_t& entry = self.artifact.entry(index);
  if (entry.kernels == nullptr && entry.num_kernels > 0) {
    throw py::value_error(std::string(self.artifact.path()) + " has no kernel table for entry " +
                          quote(entryName) + " (it was not compiled by tfc)");
  }
  for (std::optional<double> figure : {peakGflops, bandwidthGbs}) {
    if (figure && !(*figure > 0)) {
      throw py::value_error("kernel_profile: peak_gflops and bandwidth_gbs must be positive");
    }
  }
  const GpuFigures* gpu = self.artifact.table().device != TFC_DEVICE_CPU
                              ? knownGpu(self.context.deviceName())
                              : nullptr;
  if ((!peakGflops || !bandwidthGbs) && gpu == nullptr) {
    throw py::value_error(
        "kernel_profile: give peak_gflops and bandwidth_gbs (the f32 peak and STREAM-triad "
        "bandwidth `tfc-run machine` measures on a CPU; a GPU's dense bf16 tensor-core peak "
        "and HBM bandwidth: these are known for " + knownGpuNames() + ")");
  }
  MachinePeak peak;
  peak.flopsPerSecond = (peakGflops ? *peakGflops : gpu->peakGflops) * 1e9;
  peak.bytesPerSecond = (bandwidthGbs ? *bandwidthGbs : gpu->bandwidthGbs) * 1e9;
  std::vector<double> seconds(static_cast<size_t>(entry.num_kernels));
  uint64_t calls = 0;
  check(withoutGil([&] {
    return Status(tfc_context_kernel_times(self.context.get(), index, seconds.data(),
                                           seconds.size(), &calls));
  }, self.mutex));
  const std::vector<KernelCost> kernels = kernelRoofline(entry, seconds, calls, peak);
  py::list kernelRows, kindRows;
  for (const KernelCost& row : kernels) kernelRows.append(costDict(row, true));
  for (const KernelCost& kind : kindRoofline(kernels, peak)) kindRows.append(costDict(kind, false));
  py::dict result;
  result["entry"] = entryName;
  result["calls"] = calls;
  result["peak_flops_per_second"] = peak.flopsPerSecond;
  result["bytes_per_second"] = peak.bytesPerSecond;
  result["kernels"] = kernelRows;
  result["kinds"] = kindRows;
  result["total"] = costDict(totalRoofline(kernels, peak), false);
  return result;
}

}  // namespace

void bindModel(py::module_& m) {
  py::class_<TensorSpec>(m, "TensorSpec",
                         "The description of a parameter, state tensor, or entry input or "
                         "output: name, dtype, shape, initializer.")
      .def_readonly("name", &TensorSpec::name)
      .def_property_readonly("dtype", [](const TensorSpec& s) { return numpyDtype(s.dtype); },
                             "The NumPy dtype (bfloat16 needs ml_dtypes).")
      .def_property_readonly("dtype_name", [](const TensorSpec& s) { return dtypeName(s.dtype); },
                             "NumPy's name of the dtype: 'float32', 'int32', 'bfloat16'...")
      .def_property_readonly("shape", [](const TensorSpec& s) {
        return shapeTuple(s.shape.data(), static_cast<int32_t>(s.shape.size()));
      })
      .def_property_readonly("size", &TensorSpec::size, "The number of elements.")
      .def_property_readonly("nbytes", [](const TensorSpec& s) {
        return s.size() * static_cast<int64_t>(tfc_dtype_size(s.dtype));
      })
      .def_readonly("init", &TensorSpec::init,
                    "The initializer spec ('normal(0.0, 0.02)', 'zeros'...); '' for inputs "
                    "and outputs.")
      .def_readonly("frozen", &TensorSpec::frozen, "A parameter that training never updates.")
      .def("__repr__", &TensorSpec::repr);

  py::class_<EntrySpec>(m, "Entry", "An entry point: its inputs and outputs, in order.")
      .def_readonly("name", &EntrySpec::name)
      .def_property_readonly("inputs", [](const EntrySpec& e) {
        py::dict d;
        for (const auto& s : e.inputs) d[py::str(s.name)] = s;
        return d;
      }, "dict: input name -> TensorSpec, in call order.")
      .def_property_readonly("outputs", [](const EntrySpec& e) {
        py::dict d;
        for (const auto& s : e.outputs) d[py::str(s.name)] = s;
        return d;
      }, "dict: output name -> TensorSpec.")
      .def_readonly("arena_bytes", &EntrySpec::arenaBytes)
      .def_readonly("num_kernels", &EntrySpec::numKernels)
      .def("__repr__", [](const EntrySpec& e) { return "Entry(" + e.signature() + ")"; });

  py::class_<Artifact>(m, "Artifact",
                       "A compiled model (model.so), loaded. Immutable; safe to share "
                       "between threads.")
      .def(py::init([](py::handle pathArg) {
             const std::string path = fsPath(pathArg, "Artifact: path");
             auto opened = [&] {
               py::gil_scoped_release release;
               return Artifact::open(path);
             }();
             return valueOrThrow(std::move(opened), {path});
           }),
           py::arg("path"),
           "Loads the model at `path`. FileNotFoundError when there is no such file; "
           "ValueError or RuntimeError (with the runtime's reason) when it is not a model "
           "this runtime can run.")
      .def_property_readonly("path", [](const Artifact& a) { return std::string(a.path()); })
      .def_property_readonly("target", [](const Artifact& a) { return std::string(a.target()); })
      .def_property_readonly("compiler_version",
                             [](const Artifact& a) { return std::string(a.compilerVersion()); })
      .def_property_readonly("module_hash",
                             [](const Artifact& a) { return std::string(a.moduleHash()); })
      .def_property_readonly("metadata_json",
                             [](const Artifact& a) { return std::string(a.metadataJson()); })
      .def_property_readonly("metadata", [](const Artifact& a) -> py::object {
        std::string json(a.metadataJson());
        if (json.empty()) return py::dict();
        return py::module_::import("json").attr("loads")(json);
      }, "The metadata (model name and config) as a dict; {} when the model has none.")
      .def_property_readonly("params", [](const Artifact& a) {
        return specDict(a.table().params, a.paramCount());
      }, "dict: parameter name -> TensorSpec, in the artifact's order.")
      .def_property_readonly("state", [](const Artifact& a) {
        return specDict(a.table().state, a.stateCount());
      }, "dict: state tensor name -> TensorSpec (KV caches, optimizer moments).")
      .def_property_readonly("entries", [](const Artifact& a) {
        py::dict d;
        for (int32_t i = 0; i < a.entryCount(); ++i) {
          d[py::str(a.entry(i).name)] = EntrySpec(a.entry(i));
        }
        return d;
      }, "dict: entry name -> Entry.")
      .def("entry", [](const Artifact& a, const std::string& name) {
        return EntrySpec(a.entry(valueOrThrow(a.findEntry(name))));
      }, py::arg("name"), "The entry `name`; ValueError (listing the entries) when absent.")
      .def("__repr__", &artifactRepr);

  py::class_<PyParams, std::shared_ptr<PyParams>>(
      m, "Params",
      "The parameter values (weights) of a model, one buffer per parameter. A mapping: "
      "params[name] is a NumPy view of the live buffer (no copy; it sees later loads and "
      "training steps), params[name] = array copies into it after checking dtype and shape.")
      .def(py::init([](const Artifact& artifact) {
             auto self = std::make_shared<PyParams>();
             self->artifact = artifact;
             self->params = valueOrThrow(Params::create(artifact));
             return self;
           }),
           py::arg("artifact"), "Storage for every parameter of `artifact`, all unset.")
      .def_property_readonly("artifact", [](const PyParams& p) { return p.artifact; })
      .def("init", [](PyParams& p, uint64_t seed) {
        check(withoutGil([&] { return p.params.init(seed); }, p.mutex));
      }, py::arg("seed"), "Fills every parameter from its initializer spec; the values "
                          "depend only on the seed (as `tfc-run init --seed`).")
      .def("load", [](PyParams& p, py::handle pathArg, bool allowMissing,
                      bool allowUnexpected, bool copy) {
        const std::string path = fsPath(pathArg, "Params.load: path");
        tfc_params_load_options_t options;
        tfc_params_load_options_initialize(&options);
        options.allow_missing = allowMissing;
        options.allow_unexpected = allowUnexpected;
        options.copy = copy;
        check(withoutGil([&] { return p.params.loadSafetensors(path, &options); }, p.mutex),
              {path});
      }, py::arg("path"), py::kw_only(), py::arg("allow_missing") = false,
         py::arg("allow_unexpected") = false, py::arg("copy") = false,
         "Binds parameters by name from a .safetensors file, checking dtypes and shapes; "
         "nothing changes when it is refused. Aligned tensors are used in place from a "
         "private copy-on-write mapping of the file (writes never reach it); copy=True reads "
         "every tensor into the process's own memory instead (huge pages for large ones: "
         "faster decode), also for a file that may be rewritten in place meanwhile.")
      .def("load_pretrained", [](PyParams& p, py::handle pathArg, bool copy) {
        const std::string path = fsPath(pathArg, "Params.load_pretrained: path");
        std::vector<PretrainedTensor> tensors;
        check(withoutGil([&] {
                auto loaded = p.params.loadPretrained(path, copy);
                if (!loaded.ok()) return std::move(loaded).takeStatus();
                tensors = std::move(*loaded);
                return Status();
              }, p.mutex),
              {path});
        py::list report;
        for (const PretrainedTensor& tensor : tensors) {
          py::dict entry;
          entry["name"] = tensor.name;
          entry["file"] = tensor.file;
          entry["dtype"] = dtypeName(tensor.dtype);
          entry["param"] = tensor.paramIndex < 0
                               ? py::object(py::none())
                               : py::object(py::str(p.artifact.param(tensor.paramIndex).name));
          report.append(std::move(entry));
        }
        return report;
      }, py::arg("path"), py::kw_only(), py::arg("copy") = false,
         "Loads a Hugging Face checkpoint as save_pretrained wrote it: a directory with "
         "model.safetensors or model.safetensors.index.json and its shards, the index, or one "
         ".safetensors file. float32, bfloat16 and float16 tensors are converted to the "
         "parameters' dtypes; a tensor 'P.name' binds parameter 'name' when there is no tensor "
         "'name' (GPT-2's 'transformer.' prefix); tensors that are not parameters are skipped. "
         "Nothing changes on failure. Returns one dict per tensor of the checkpoint: name, "
         "file, dtype (as in the file) and param (the parameter it was loaded into, or None "
         "when skipped).")
      .def("load_weights", [](PyParams& p, py::handle pathArg, bool allowUnexpected,
                              bool copy) {
        const std::string path = fsPath(pathArg, "Params.load_weights: path");
        WeightsLoadOptions options;
        options.allowUnexpected = allowUnexpected;
        options.memory = copy ? WeightsMemory::kCopied : WeightsMemory::kMapped;
        std::vector<std::string> notes;
        check(withoutGil([&] {
                auto loaded = loadWeights(path, p.params, options);
                if (!loaded.ok()) return std::move(loaded).takeStatus();
                notes = std::move(*loaded);
                return Status();
              }, p.mutex),
              {path});
        return notes;
      }, py::arg("path"), py::kw_only(), py::arg("allow_unexpected") = false,
         py::arg("copy") = false,
         "Loads whatever `tfc-run generate --weights` takes: a .safetensors file of the "
         "parameters (as save writes), a training checkpoint of this model (Context.train's "
         "checkpoint; its optimizer state is skipped, and a checkpoint of another model is "
         "refused naming both module hashes), or a Hugging Face checkpoint directory or index "
         "(as load_pretrained). allow_unexpected ignores tensors that are none of these "
         "(the error says --allow-unexpected, the command-line name). Nothing changes on "
         "failure. Returns the notes a user should see, one line each: what was skipped or "
         "converted, e.g. '... is a training checkpoint: taking its 28 parameters, ignoring "
         "its 57 state tensors (optimizer moments, step)'.")
      .def("save", [](PyParams& p, py::handle pathArg) {
        const std::string path = fsPath(pathArg, "Params.save: path");
        check(withoutGil([&] { return p.params.saveSafetensors(path); }, p.mutex));
      }, py::arg("path"), "Writes every parameter (all must be set) to a .safetensors file, "
                          "atomically.")
      .def("is_set", [](const PyParams& p, const std::string& name) {
        return p.params.isSet(p.index(name));
      }, py::arg("name"))
      .def_property_readonly("all_set", [](const PyParams& p) {
        return p.params.checkAllSet().ok();
      }, "Whether every parameter has been initialized, loaded or assigned.")
      .def("__getitem__", [](py::object selfObject, const std::string& name) {
        PyParams& p = selfObject.cast<PyParams&>();
        int32_t index = p.index(name);
        if (!p.params.isSet(index)) {
          throw std::runtime_error(std::string(p.artifact.path()) + ": parameter " +
                                   quote(name) + " is not set (init, load or assign it first)");
        }
        return aliasingArray(valueOrThrow(p.params.tensor(index)), selfObject);
      }, py::arg("name"))
      .def("__setitem__", [](PyParams& p, const std::string& name, py::handle value) {
        int32_t index = p.index(name);
        std::string subject = std::string(p.artifact.path()) + ": parameter " + quote(name);
        py::array array = inputArray(value, p.artifact.param(index), subject);
        std::vector<int64_t> shape;
        tfc_tensor_ref_t ref = tensorRefOf(array, static_cast<tfc_dtype_t>(
                                                      p.artifact.param(index).dtype), shape);
        check(withoutGil([&] { return Status(tfc_params_set(p.params.get(), index, &ref)); },
                         p.mutex));
      }, py::arg("name"), py::arg("value"))
      .def("__contains__", [](const PyParams& p, const std::string& name) {
        return p.artifact.findParam(name).ok();
      })
      .def("__len__", [](const PyParams& p) { return p.artifact.paramCount(); })
      .def("__iter__", [](const PyParams& p) {
        return py::iter(specDict(p.artifact.table().params, p.artifact.paramCount()));
      })
      .def("keys", [](const PyParams& p) {
        py::list names;
        for (int32_t i = 0; i < p.artifact.paramCount(); ++i) names.append(p.artifact.param(i).name);
        return names;
      })
      .def("__repr__", [](const PyParams& p) {
        int32_t set = 0;
        for (int32_t i = 0; i < p.artifact.paramCount(); ++i) set += p.params.isSet(i) ? 1 : 0;
        return "<tfc.Params of " + quote(std::string(p.artifact.path())) + ": " +
               std::to_string(p.artifact.paramCount()) + " tensors, " + std::to_string(set) +
               " set>";
      });

  ContextClass context(
      m, "Context",
      "A session with a model: its state (KV cache, optimizer moments), scratch memory and "
      "threads. Calls release the GIL; one call at a time per context (other threads wait).");
  context
      .def(py::init([](std::shared_ptr<PyParams> params, int32_t numThreads,
                       uint64_t stateSeed) {
             tfc_context_options_t options;
             tfc_context_options_initialize(&options);
             options.num_threads = numThreads;
             options.state_seed = stateSeed;
             auto self = std::make_shared<PyContext>();
             self->artifact = params->artifact;
             self->params = params;
             self->context = valueOrThrow(Context::create(params->artifact, params->params,
                                                          &options));
             return self;
           }),
           py::arg("params"), py::kw_only(), py::arg("num_threads") = 0,
           py::arg("state_seed") = 0,
           "A context for the model of `params` (which need not be set until the first "
           "call). num_threads: 0 = all cores, 1 = the calling thread only.")
      .def_property_readonly("artifact", [](const PyContext& c) { return c.artifact; })
      .def_property_readonly("params", [](const PyContext& c) { return c.params; })
      .def_property_readonly("num_threads", [](const PyContext& c) { return c.context.numThreads(); })
      .def_property_readonly("arena_bytes",
                             [](const PyContext& c) { return c.context.arenaBytesAllocated(); },
                             "Scratch memory allocated so far (entries called at least once).")
      .def("call", &call, py::arg("entry"), py::pos_only(),
           "call(entry, *inputs, **inputs) -> dict[str, numpy.ndarray]\n\n"
           "Calls entry point `entry` with its inputs by position or by name; returns its "
           "outputs by name, as new arrays. Arrays of the right dtype that are C-contiguous "
           "are read in place; see the README for conversions. ValueError names the input "
           "when one is missing, unknown, or of the wrong dtype or shape.")
      .def("set_profiling", [](PyContext& c, bool enabled) {
        check(withoutGil([&] {
          return Status(tfc_context_set_profiling(c.context.get(), enabled));
        }, c.mutex));
      }, py::arg("enabled"),
         "While enabled, every call times each of its kernel launches (two clock reads per "
         "launch) for kernel_profile. Enabling or disabling clears the times.")
      .def("kernel_profile", &kernelProfile, py::arg("entry"), py::kw_only(),
           py::arg("peak_gflops") = py::none(), py::arg("bandwidth_gbs") = py::none(),
           "kernel_profile(entry, *, peak_gflops=None, bandwidth_gbs=None) -> dict\n\n"
           "Where the calls of `entry` since set_profiling(True) spent their time, kernel by "
           "kernel against each kernel's roofline floor, as `tfc-run profile` prints it: "
           "'kernels' (slowest first) and 'kinds', dicts of name, ops, kind, launches, "
           "seconds, flops, bytes (per call), floor_seconds and regime ('compute', 'memory' "
           "or 'overhead'), and their 'total'. The floors take peak_gflops and bandwidth_gbs "
           "(`tfc-run machine` measures a CPU's); a CUDA context on an H100, H200 or A100 "
           "defaults to its datasheet's dense bf16 tensor-core peak and HBM bandwidth.")
      .def("reset_state", [](PyContext& c) {
        check(withoutGil([&] { return c.context.resetState(); }, c.mutex));
      }, "Re-initializes the state (an empty KV cache, zero optimizer moments).")
      .def("load_state", [](PyContext& c, py::handle pathArg) {
        const std::string path = fsPath(pathArg, "Context.load_state: path");
        check(withoutGil([&] { return c.context.loadStateSafetensors(path); }, c.mutex), {path});
      }, py::arg("path"))
      .def("save_state", [](PyContext& c, py::handle pathArg) {
        const std::string path = fsPath(pathArg, "Context.save_state: path");
        check(withoutGil([&] { return c.context.saveStateSafetensors(path); }, c.mutex));
      }, py::arg("path"))
      .def("state", [](py::object selfObject, const std::string& name) {
        PyContext& c = selfObject.cast<PyContext&>();
        int32_t i = 0;
        while (i < c.artifact.stateCount() && name != c.artifact.state(i).name) ++i;
        if (i == c.artifact.stateCount()) {
          throw py::key_error(std::string(c.artifact.path()) + ": no state tensor " + quote(name));
        }
        return aliasingArray(valueOrThrow(c.context.state(i)), selfObject);
      }, py::arg("name"), "A NumPy view of state tensor `name` (no copy; writable).")
      .def("__repr__", [](const PyContext& c) {
        return "<tfc.Context of " + quote(std::string(c.artifact.path())) + ", " +
               std::to_string(c.context.numThreads()) + " threads>";
      });
  bindLoops(context);
}

}  // namespace tfc::python
