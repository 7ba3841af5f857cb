// Diagnosis accuracy on the labelled failure logs (tests/knowledge/logs) and retrieval latency
// of the knowledge base. Prints one Markdown section for bench/RESULTS.md.
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "agents/knowledge/diagnosis_eval.h"
#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/knowledge_base.h"

namespace {

using Clock = std::chrono::steady_clock;

double MicrosSince(Clock::time_point t0, int n) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
}

struct Tally {
  int n = 0, category = 0, parameters = 0, retryable = 0;
};

void PrintAccuracy(const std::vector<paratune::CaseOutcome>& outcomes) {
  std::map<std::string, Tally> by;
  Tally all;
  for (const auto& o : outcomes) {
    for (Tally* t : {&by[o.c->category], &all}) {
      ++t->n;
      t->category += o.category_ok;
      t->parameters += o.parameters_ok;
      t->retryable += o.retryable_ok;
    }
  }
  std::printf(
      "| expected category | logs | category correct | parameters correct | "
      "retryable correct |\n|---|---|---|---|---|\n");
  for (const auto& [cat, t] : by) {
    std::printf("| %s | %d | %d | %d | %d |\n", cat.c_str(), t.n, t.category, t.parameters,
                t.retryable);
  }
  std::printf("| **all** | %d | %d (%.1f%%) | %d (%.1f%%) | %d (%.1f%%) |\n\n", all.n, all.category,
              100.0 * all.category / all.n, all.parameters, 100.0 * all.parameters / all.n,
              all.retryable, 100.0 * all.retryable / all.n);
  for (const auto& o : outcomes) {
    if (!o.category_ok || !o.parameters_ok || !o.retryable_ok) {
      std::printf("- miss: `%s` expected %s, got %s: %s\n", o.c->file.c_str(),
                  o.c->category.c_str(), o.diagnosis.category.c_str(), o.diagnosis.summary.c_str());
    }
  }
}

}  // namespace

int main() {
  using namespace paratune;
  auto t0 = Clock::now();
  auto kb = KnowledgeBase::LoadEmbedded();
  if (!kb.ok()) {
    std::fprintf(stderr, "%s\n", kb.status().ToString().c_str());
    return 1;
  }
  double load_ms = MicrosSince(t0, 1) / 1000;
  auto diag = Diagnostician::Create(kb->get());
  auto cases = LoadLabelledCases(PARATUNE_SOURCE_DIR "/tests/knowledge/logs");
  if (!diag.ok() || !cases.ok()) {
    std::fprintf(stderr, "%s\n", cases.status().ToString().c_str());
    return 1;
  }
  std::printf("## Knowledge: failure diagnosis and retrieval\n\n");
  std::printf(
      "Labelled set: %zu realistic failure logs (tests/knowledge/logs/labels.yaml). "
      "Parameters correct: the expected key ranks first and every expected key is "
      "named (none expected: none named).\n\n",
      cases->size());
  t0 = Clock::now();
  auto outcomes = EvaluateCases(**diag, *cases);
  double per_log_us = MicrosSince(t0, static_cast<int>(cases->size()));
  PrintAccuracy(outcomes);
  const std::vector<std::string> queries = {
      "CUDA out of memory activation recomputation micro batch",
      "when to raise tensor parallelism NVLink",
      "TPU v5e mesh iciFsdp iciTensor sharding",
      "NCCL watchdog timeout retry",
      "MoE expert parallel all-to-all",
      "pipeline bubble virtual pipeline interleaving"};
  constexpr int kRounds = 200;
  t0 = Clock::now();
  size_t hits = 0;
  for (int r = 0; r < kRounds; ++r) {
    for (const auto& q : queries) hits += (*kb)->Search(q, 5).size();
  }
  double search_us = MicrosSince(t0, kRounds * static_cast<int>(queries.size()));
  std::printf("\n| measure | value |\n|---|---|\n");
  std::printf("| knowledge base load (embedded: %zu documents, %zu signatures) | %.2f ms |\n",
              (*kb)->documents().size(), (*kb)->signatures().size(), load_ms);
  std::printf("| diagnosis per log (mean) | %.1f us |\n", per_log_us);
  std::printf("| BM25 search, top 5 (mean over %zu queries) | %.1f us |\n", queries.size(),
              search_us);
  std::printf("| results returned | %zu |\n\n", hits / kRounds);
  for (const auto& q : queries) {
    auto h = (*kb)->Search(q, 1);
    std::printf("- `%s` -> %s\n", q.c_str(), h.empty() ? "(none)" : h[0].id.c_str());
  }
  std::printf("\n");
  return 0;
}
