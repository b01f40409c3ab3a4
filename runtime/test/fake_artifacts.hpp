// Paths of the hand-written fake artifacts that runtime/CMakeLists.txt builds for the tests.
#ifndef TFC_RUNTIME_TEST_FAKE_ARTIFACTS_HPP_
#define TFC_RUNTIME_TEST_FAKE_ARTIFACTS_HPP_

#include <string>

namespace tfc::testing {

// The path of fake artifact |name| ("fake_model", "fake_break_3", ...).
inline std::string fakeArtifact(const std::string& name) {
  return std::string(TFC_FAKE_ARTIFACT_DIR) + "/" + name + ".so";
}

}  // namespace tfc::testing

#endif  // TFC_RUNTIME_TEST_FAKE_ARTIFACTS_HPP_
