// The dev half of the conformance corpus (tests/collectors/corpus/dev) as the collectors' tests
// read it: an excerpt's log bytes by name. Never the held-out half (corpus/README.md).
#ifndef PARATUNE_TESTS_COLLECTORS_CORPUS_DEV_H_
#define PARATUNE_TESTS_COLLECTORS_CORPUS_DEV_H_

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace paratune::collectors::testing {

// The bytes of tests/collectors/corpus/dev/NAME.log ("" when it cannot be read).
inline std::string ReadDevExcerpt(const std::string& name) {
  const std::filesystem::path p =
      std::filesystem::path(PARATUNE_SOURCE_DIR) / "tests/collectors/corpus/dev" / (name + ".log");
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace paratune::collectors::testing

#endif  // PARATUNE_TESTS_COLLECTORS_CORPUS_DEV_H_
