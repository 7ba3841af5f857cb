// libFuzzer target: the Diagnostician over arbitrary log bytes (issue 16: a hostile or broken
// log must never abort the operator, and diagnosis must stay linear in the log). The input is
// split into a pod reason (first line) and the log; the knowledge base is the embedded one every
// operator runs. Invariants: Diagnose returns, its diagnosis dumps as strict JSON (evidence cut
// on UTF-8 boundaries), a category is always named, and confidence stays in [0, 100].
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/knowledge_base.h"

namespace {

const paratune::Diagnostician& TheDiagnostician() {
  static const std::unique_ptr<paratune::KnowledgeBase> kb = [] {
    auto loaded = paratune::KnowledgeBase::LoadEmbedded();
    if (!loaded.ok()) __builtin_trap();  // the shipped knowledge must load
    return std::move(loaded).value();
  }();
  static const std::unique_ptr<paratune::Diagnostician> d = [] {
    auto made = paratune::Diagnostician::Create(kb.get());
    if (!made.ok()) __builtin_trap();
    return std::move(made).value();
  }();
  return *d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const size_t nl = text.find('\n');
  paratune::DiagnosisInput in;
  in.pod_reason = nl == std::string::npos ? "" : text.substr(0, std::min<size_t>(nl, 64));
  in.log = nl == std::string::npos ? text : text.substr(nl + 1);
  in.exit_code = size > 0 ? static_cast<int>(data[0]) : 0;
  in.events.push_back(in.log.substr(0, std::min<size_t>(in.log.size(), 256)));
  const paratune::FailureDiagnosis d = TheDiagnostician().Diagnose(in);
  if (d.category.empty() || d.confidence < 0 || d.confidence > 100) __builtin_trap();
  // Strict dump: throws on invalid UTF-8, which libFuzzer reports as a crash.
  (void)d.ToJson().dump();
  return 0;
}
