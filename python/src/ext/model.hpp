// The Python objects behind tfc.Params and tfc.Context, shared by model.cpp (calls) and
// loops.cpp (generate, train).
//
// Locking: the runtime wants a context used by one thread at a time and parameters written
// only while nothing else uses them (runtime.h). Python threads can break both once a call
// releases the GIL, so each Context and each Params carries a mutex: a call holds both
// (calls of contexts sharing parameters run one after another, since train_step writes
// them), init/load/set/save hold the parameters'. Mutexes are taken after the GIL is
// released, never the other way round, so a waiting thread cannot block the interpreter.
// A generate/train callback runs on the thread that holds them: using the same context or
// parameters from there raises RuntimeError instead of deadlocking.
#ifndef TFC_PYTHON_MODEL_HPP_
#define TFC_PYTHON_MODEL_HPP_

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "common.hpp"

namespace tfc::python {

// A mutex that refuses to be locked again by the thread holding it.
class OwnedMutex {
 public:
  explicit OwnedMutex(std::string what) : what_(std::move(what)) {}
  void lock() {
    if (owner_.load() == std::this_thread::get_id()) {
      throw std::runtime_error("the " + what_ + " is in use by this thread's running "
                               "generate() or train() (a callback cannot use it)");
    }
    mutex_.lock();
    owner_.store(std::this_thread::get_id());
  }
  bool try_lock() {
    if (owner_.load() == std::this_thread::get_id() || !mutex_.try_lock()) return false;
    owner_.store(std::this_thread::get_id());
    return true;
  }
  void unlock() {
    owner_.store(std::thread::id());
    mutex_.unlock();
  }

 private:
  std::string what_;
  std::mutex mutex_;
  std::atomic<std::thread::id> owner_{};
};

struct PyParams {
  Artifact artifact;
  Params params;
  OwnedMutex mutex{"Params"};

  // The index of parameter |name|; KeyError (with the closest name) when there is none.
  int32_t index(const std::string& name) const {
    auto found = artifact.findParam(name);
    if (!found.ok()) throw py::key_error(found.status().message());
    return *found;
  }
};

struct PyContext {
  Artifact artifact;
  std::shared_ptr<PyParams> params;
  Context context;
  OwnedMutex mutex{"Context"};
};

using ContextClass = py::class_<PyContext, std::shared_ptr<PyContext>>;

// Runs |fn| with the GIL released and the given mutexes held.
template <typename Fn, typename... Mutexes>
auto withoutGil(Fn&& fn, Mutexes&... mutexes) {
  py::gil_scoped_release release;
  std::scoped_lock lock(mutexes...);
  return fn();
}

// Adds generate() and train() to tfc.Context (loops.cpp).
void bindLoops(ContextClass& context);

}  // namespace tfc::python

#endif  // TFC_PYTHON_MODEL_HPP_
