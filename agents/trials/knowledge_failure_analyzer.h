// The FailureAnalyzer over agents/knowledge: its Diagnostician reading the embedded knowledge base
// (failure signatures, known failures) and a site's documents.
#ifndef PARATUNE_AGENTS_TRIALS_KNOWLEDGE_FAILURE_ANALYZER_H_
#define PARATUNE_AGENTS_TRIALS_KNOWLEDGE_FAILURE_ANALYZER_H_

#include <memory>
#include <string>

#include "agents/trials/failure_analyzer.h"
#include "base/status.h"

namespace paratune {

class KnowledgeBase;

// The agents/knowledge Diagnostician over the embedded knowledge base plus the documents of
// `knowledge_dir` when not empty. Fails when the embedded knowledge is malformed (a bug) or a
// site document is.
Result<std::unique_ptr<FailureAnalyzer>> MakeKnowledgeFailureAnalyzer(
    const std::string& knowledge_dir = "");
// The Diagnostician over `kb` (shared: the analyzer keeps it alive).
Result<std::unique_ptr<FailureAnalyzer>> MakeKnowledgeFailureAnalyzer(
    std::shared_ptr<const KnowledgeBase> kb);

// A new analyzer over the embedded knowledge; the keyword analyzer when that fails to load.
// Loading the knowledge base, known failures included, costs tens of milliseconds: a program
// makes one and hands it to every session it runs (SessionDeps::diagnostician), nothing keeps
// one process-wide.
std::shared_ptr<const FailureAnalyzer> MakeEmbeddedFailureAnalyzer();

}  // namespace paratune

#endif  // PARATUNE_AGENTS_TRIALS_KNOWLEDGE_FAILURE_ANALYZER_H_
