// The shipped knowledge base and a Diagnostician over it, as the operator builds them, for the
// tests that diagnose logs. Header-only: each test binary includes it.
#ifndef PARATUNE_TESTS_SUPPORT_EMBEDDED_DIAGNOSTICIAN_H_
#define PARATUNE_TESTS_SUPPORT_EMBEDDED_DIAGNOSTICIAN_H_

#include <gtest/gtest.h>

#include <memory>

#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/knowledge_base.h"

namespace paratune::testing {

struct EmbeddedDiagnostician {
  std::unique_ptr<KnowledgeBase> kb;
  std::unique_ptr<Diagnostician> diagnostician;  // reads `kb`; null when either failed to load
};

// Records a test failure naming the error when the embedded knowledge does not load.
inline EmbeddedDiagnostician LoadEmbeddedDiagnostician() {
  EmbeddedDiagnostician out;
  auto kb = KnowledgeBase::LoadEmbedded();
  if (!kb.ok()) {
    ADD_FAILURE() << kb.status().ToString();
    return out;
  }
  out.kb = std::move(*kb);
  auto d = Diagnostician::Create(out.kb.get());
  if (!d.ok()) {
    ADD_FAILURE() << d.status().ToString();
    return out;
  }
  out.diagnostician = std::move(*d);
  return out;
}

}  // namespace paratune::testing

#endif  // PARATUNE_TESTS_SUPPORT_EMBEDDED_DIAGNOSTICIAN_H_
