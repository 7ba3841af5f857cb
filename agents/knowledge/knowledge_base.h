// The knowledge base: expert documents (markdown), failure signatures (YAML or JSON data files),
// known failures (labelled failure logs, agents/knowledge/known_failures.h) and past
// optimizations, with BM25 retrieval so the Diagnostician and the Proposer cite what they rest
// on. The shipped knowledge is embedded in the library
// (agents/knowledge/data); users add more with LoadDirectory (`--knowledge-dir`,
// PARATUNE_KNOWLEDGE_DIR) and the operator with AddDocument/AddSignatures (ConfigMap contents).
//
// Thread-safety: const methods may run concurrently; mutating methods (Add*, Load*) must not run
// concurrently with anything else on the same object.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_KNOWLEDGE_BASE_H_
#define PARATUNE_AGENTS_KNOWLEDGE_KNOWLEDGE_BASE_H_

#include <bitset>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/knowledge/bm25.h"
#include "agents/knowledge/failure_words.h"
#include "agents/knowledge/known_failures.h"
#include "base/status.h"

namespace paratune {

// How strongly a matching line explains a failure. A root cause beats a secondary error, which
// beats a symptom (watchdog timeouts, deadline exceeded, "child failed"), wherever they appear.
enum class SignatureTier { kRoot = 0, kSecondary = 1, kSymptom = 2 };

// One failure signature: a problem key, the raw text that identifies it, what causes it, what to
// do, and which parameters it implicates.
struct FailureSignature {
  std::string key;       // "cuda-oom"; unique; a later definition with the same key replaces it
  std::string category;  // a FailureCategory name (agents/core/failure_category.h)
  SignatureTier tier = SignatureTier::kRoot;
  std::vector<std::string> contains;  // case-insensitive substrings; any one matches a line
  std::vector<std::string> regex;     // ECMAScript, case-insensitive; any one matches a line
  std::vector<std::regex> compiled;   // `regex`, compiled by AddSignatures
  // Per regex: a lower-case literal every match must contain ("" if none), checked first so
  // most lines never reach the regex engine.
  std::vector<std::string> required_literals;
  // The bytes of each `contains` entry and of each required literal (built with the patterns):
  // a needle with a byte the line lacks is skipped in a few word operations, without a search.
  std::vector<std::bitset<256>> contains_bytes;
  std::vector<std::bitset<256>> literal_bytes;
  std::string error_type;  // for the summary when the line names none
  std::string cause;
  std::string remedy;
  // Config keys (and model fields such as numAttentionHeads) it implicates, most likely first.
  std::vector<std::string> parameters;
  // How the Diagnostician refines `parameters`: none | memory | tpu-memory | divisibility | mesh.
  std::string attribution = "none";
  // Regex capture group -> name ("numAttentionHeads", "tp") for values named in the message.
  std::map<std::string, int> captures;
  bool retryable = false;
  int confidence = 80;  // 0..100, when the signature matches unambiguously
  std::string source;   // the file or ConfigMap it came from
  // Where the pattern's text comes from: "owner/repo path/to/file.py" of the framework source that
  // raises the message, or the URL of the public log it was written from ("" when not given).
  std::string reference;

  // True when `line` matches one of the patterns. `lower` is the line in lower case.
  bool Matches(const std::string& line, const std::string& lower) const;
  // The set of bytes `text` holds: of a line, for the Matches below; of each needle, at parse.
  static std::bitset<256> BytesOf(const std::string& text);
  // The same, given the set of bytes `lower` contains (a needle with a byte the line lacks is
  // skipped without a search: keeps scanning linear and cheap on hostile long lines).
  bool Matches(const std::string& line, const std::string& lower,
               const std::bitset<256>& present) const;
};

// A finished campaign's lesson, searchable by later proposals ("past optimizations").
struct PastOptimization {
  std::string id;        // "llama3-8b-h100x8/trial-7"
  std::string workload;  // "llama3-8b on 8 x nvidia-h100-80gb, seq 8192, global batch 512"
  // The campaign's workload section (WorkloadJson: model, training, hardware) when the record
  // carries it (`workloadSpec`); null for records written before it existed. Warm starts match
  // on it (agents/engines/warm_start.h).
  nlohmann::json workload_spec;
  Config before, after;
  std::string metric;  // "mfu"
  double before_value = 0, after_value = 0;
  std::string note;  // what changed and why it helped
};

struct KnowledgeDocument {
  std::string name;   // "docs/parallelism.md"
  std::string title;  // first "# " heading, or the name
  std::string text;   // markdown
};

// One retrieval result. `id` is what a citation names: "docs/parallelism.md#tensor-parallelism",
// "signature:cuda-oom" or "past:<id>".
struct KnowledgeHit {
  std::string kind;  // document | signature | past-optimization
  std::string id;
  std::string title;
  std::string snippet;  // the first ~200 characters of the matching passage
  double score = 0;
};

// Parses YAML or JSON `{pastOptimizations: [{id, workload, workloadSpec, before, after, metric,
// beforeValue, afterValue, note}]}` (what a finished campaign exports, agents/report/report.h).
// Errors name `name` and the field; all-or-nothing.
Result<std::vector<PastOptimization>> ParsePastOptimizations(const std::string& name,
                                                             const std::string& text);

class KnowledgeBase {
 public:
  KnowledgeBase() = default;
  KnowledgeBase(const KnowledgeBase&) = delete;
  KnowledgeBase& operator=(const KnowledgeBase&) = delete;

  // The knowledge shipped with paratune. Fails only if an embedded file is malformed (a bug).
  static Result<std::unique_ptr<KnowledgeBase>> LoadEmbedded();
  // LoadEmbedded plus, when `dir` is non-empty, that folder (the CLI's --knowledge-dir or
  // $PARATUNE_KNOWLEDGE_DIR, the operator's mounted knowledge ConfigMaps).
  static Result<std::unique_ptr<KnowledgeBase>> LoadDefault(const std::string& dir);

  // Adds every *.md (documents) and *.yaml/*.yml/*.json under `path`, recursively, following
  // file symlinks: a data file with a top-level `cases` key holds known failures, one with
  // `pastOptimizations` past optimizations, any other signatures. Entries named `..*` (a
  // ConfigMap volume's `..data` and `..<timestamp>` directories) are skipped, so a mounted
  // ConfigMap `<path>/<name>/<key>` is read once, by its key. NotFound when the folder does not
  // exist; InvalidArgument naming the file on bad content.
  Status LoadDirectory(const std::string& path);
  // True for a name LoadDirectory reads: *.md, *.yaml, *.yml, *.json.
  static bool IsKnowledgeFile(const std::string& name);
  // What a data file holds, by its top-level key: "cases", "pastOptimizations", or "" (signatures,
  // or text that does not parse; AddSignatures then says why).
  static std::string DataKind(const std::string& text);
  // One file's contents, routed as LoadDirectory routes it: *.md a document; a data file with a
  // top-level `cases` key known failures, with `pastOptimizations` past optimizations, any other
  // signatures. kInvalidArgument naming `name` (and the field) when the name is not a knowledge
  // file or the content is bad; nothing of that file is added then.
  Status AddFile(const std::string& name, const std::string& text);
  // Adds one markdown document; a document with the same name is replaced.
  Status AddDocument(const std::string& name, const std::string& markdown);
  // Parses YAML or JSON `{signatures: [...]}` (or a bare list). Errors name the file and the
  // field ("custom.yaml: signatures[2].category: unknown category \"Foo\""); nothing is added
  // when any entry is bad.
  // `allow_regex` false (knowledge a namespace user wrote): a signature with `regex` is an error
  // naming it, `contains` substrings only (a backtracking pattern could stall whoever matches).
  Status AddSignatures(const std::string& name, const std::string& text, bool allow_regex = true);
  void AddPastOptimization(const PastOptimization& p);
  // ParsePastOptimizations, then adds every record. LoadDirectory routes files with a top-level
  // pastOptimizations key here.
  Status AddPastOptimizations(const std::string& name, const std::string& text);

  // ParseLabelledCases, then adds every case (a case with the URL of one already known replaces
  // it). Nothing is added when any case is bad.
  Status AddKnownFailures(const std::string& name, const std::string& text);

  const std::vector<FailureSignature>& signatures() const { return signatures_; }
  const std::vector<LabelledCase>& known_failures() const { return known_failures_; }
  // The known failure most like `text` (events, log and pod reason as the Diagnostician reads
  // them); nothing when none shares a term with it.
  std::optional<SimilarFailure> MostSimilarFailure(const std::string& text) const {
    return known_index_.MostSimilar(text);
  }
  // The category the words of `text` point to, learned from all the known failures together
  // (agents/knowledge/failure_words.h); nothing when fewer than two categories are known.
  std::optional<CategoryGuess> GuessCategoryFromWords(const std::string& text) const {
    return failure_words_.Guess(text);
  }
  const std::vector<KnowledgeDocument>& documents() const { return documents_; }
  const std::vector<PastOptimization>& past_optimizations() const { return past_; }
  const FailureSignature* FindSignature(const std::string& key) const;

  // The k best passages for `query` by BM25 over document sections, signatures and past
  // optimizations; ties broken by id. Empty when nothing shares a term with the query.
  std::vector<KnowledgeHit> Search(const std::string& query, size_t k) const;

 private:
  void IndexDocument(const KnowledgeDocument& doc);
  void IndexSignature(const FailureSignature& sig);
  void IndexPast(const PastOptimization& p);
  void RebuildIndex();

  std::vector<KnowledgeDocument> documents_;
  std::vector<FailureSignature> signatures_;
  std::vector<PastOptimization> past_;
  std::vector<LabelledCase> known_failures_;
  KnownFailureIndex known_index_;       // over known_failures_, rebuilt when it changes
  FailureWordModel failure_words_;      // over known_failures_, rebuilt with known_index_
  std::vector<KnowledgeHit> passages_;  // parallel to index_ entries (score unset)
  Bm25Index index_;
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_KNOWLEDGE_BASE_H_
