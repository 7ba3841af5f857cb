#include "agents/knowledge/diagnostician.h"

#include <algorithm>
#include <bitset>
#include <cctype>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>

#include "agents/core/failure_category.h"
#include "agents/knowledge/attribution.h"
#include "agents/knowledge/workload_fields.h"
#include "agents/model/workload.h"
#include "base/strings.h"
#include "base/utf8.h"

namespace paratune {

namespace {

constexpr size_t kMaxLineLength = 4096;  // longer lines are cut before matching
constexpr size_t kEvidenceLineLength = 300;
// The known failures decide a log no signature explains only when their vote is clear (the
// winning category's score at least kSimilarMargin ahead of the next, relative) and the cited
// case is close (BM25 score at least kSimilarScore: a few rare terms in common, not a generic
// "exit code 1"). Chosen on the fifth collection's dev half before it was added to the known
// failures (bench/RESULTS.md, "Diagnosis on public logs").
constexpr double kSimilarMargin = 0.6;
constexpr double kSimilarScore = 15.0;
// Only the log's last kSimilarQueryLines lines, at most kSimilarQueryBytes, are compared: the
// known failures are quoted error text, and a trial's log tail is mostly progress lines whose
// words would make it "like" any case that quotes some (a hostile megabyte costs no more).
constexpr size_t kSimilarQueryBytes = 16384;
constexpr size_t kSimilarQueryLines = 30;
// The words decide a log neither explains only when the category they point to is at least
// this probable (agents/knowledge/failure_words.h). Chosen with kFailureWordsAlpha by replaying
// each public collection's dev half against the signatures and known failures that existed
// before it: in those fresh wordings, 26 of 67 logs nothing explained were decided, 16 right and
// 6 of the 27 labelled Unknown made wrong (+10 of 230; 0.7: +5, 0.99: +5).
constexpr double kWordsPosterior = 0.9;
constexpr int kWordsConfidence = 30;

// One line of evidence: trimmed, cut to kEvidenceLineLength bytes of valid UTF-8.
std::string EvidenceLine(const std::string& s) {
  return Utf8Head(Trim(s, " \t\r"), kEvidenceLineLength, "...");
}

// Events first (scheduling happens before the container runs), then the log, then what the
// kubelet said about the container.
std::vector<std::string> InputLines(const DiagnosisInput& in) {
  std::vector<std::string> lines;
  for (const auto& e : in.events) lines.push_back(e);
  std::istringstream ss(in.log);
  std::string line;
  while (std::getline(ss, line)) {
    lines.emplace_back(Utf8Prefix(line, kMaxLineLength));
  }
  if (!in.pod_reason.empty()) lines.push_back("pod terminated, reason: " + in.pod_reason);
  return lines;
}

struct Match {
  const FailureSignature* sig = nullptr;
  size_t line = 0;
};

// The explaining match: the best tier wins; within a tier, the earliest line; within a line, the
// knowledge base's order.
Match FindCause(const std::vector<FailureSignature>& sigs, const std::vector<std::string>& lines) {
  Match best;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string lower = Lower(lines[i]);
    const std::bitset<256> present = FailureSignature::BytesOf(lower);
    for (const auto& sig : sigs) {
      if (best.sig != nullptr && sig.tier >= best.sig->tier) continue;
      if (sig.Matches(lines[i], lower, present)) best = {&sig, i};
    }
    if (best.sig != nullptr && best.sig->tier == SignatureTier::kRoot) break;
  }
  return best;
}

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The first exception type on the line: an identifier ([A-Za-z_][A-Za-z0-9_.]*) ending in
// Error, Exception or Failed at a word boundary ("torch.OutOfMemoryError"). "" when none. One
// pass per suffix (a backtracking regex here was quadratic on long identifier-like lines).
std::string FindErrorType(const std::string& line) {
  size_t best_end = std::string::npos;
  size_t best_begin = 0;
  for (const char* suffix : {"Error", "Exception", "Failed"}) {
    const size_t n = std::char_traits<char>::length(suffix);
    for (size_t at = line.find(suffix); at != std::string::npos; at = line.find(suffix, at + 1)) {
      const size_t end = at + n;
      if (end < line.size() && IsWordChar(line[end])) continue;
      size_t begin = at;
      while (begin > 0 && (IsWordChar(line[begin - 1]) || line[begin - 1] == '.')) --begin;
      while (begin < at &&
             !(std::isalpha(static_cast<unsigned char>(line[begin])) || line[begin] == '_')) {
        ++begin;
      }
      if (begin == at) continue;  // a bare "Error" names no type
      if (best_end == std::string::npos || begin < best_begin) {
        best_begin = begin;
        best_end = end;
      }
      break;
    }
  }
  return best_end == std::string::npos ? "" : line.substr(best_begin, best_end - best_begin);
}

// The exception type named on the matching line or the few after it (a traceback's last line).
std::string ErrorType(const std::vector<std::string>& lines, size_t at, size_t lookahead,
                      const std::string& fallback, size_t* type_line) {
  for (size_t i = at; i < lines.size() && i <= at + lookahead; ++i) {
    std::string type = FindErrorType(lines[i]);
    if (!type.empty()) {
      *type_line = i;
      return type;
    }
  }
  *type_line = at;
  return fallback;
}

// Whether the trial's own program logged that it started (its distributed or framework
// initialization), as opposed to a log that holds only Kubernetes' report of the failure.
bool ShowsStart(const std::vector<std::string>& lines) {
  for (const auto& l : lines) {
    if (l.find("nitializ") != std::string::npos) return true;  // Initializing, initialized
  }
  return false;
}

bool ShowsProgress(const std::vector<std::string>& lines) {
  for (const auto& l : lines) {
    if (l.find(" iteration ") != std::string::npos ||
        l.find("completed step:") != std::string::npos || l.rfind("step:", 0) == 0) {
      return true;
    }
  }
  return false;
}

// The non-negative integer right after `key` in `line` (-1 when there is none).
long IntAfter(const std::string& line, const std::string& key) {
  size_t p = line.find(key);
  if (p == std::string::npos) return -1;
  p += key.size();
  long v = -1;
  for (; p < line.size() && std::isdigit(static_cast<unsigned char>(line[p])) && v < 1000000; ++p) {
    v = (v < 0 ? 0 : v * 10) + (line[p] - '0');
  }
  return v;
}

// Why a collective timeout will happen again, from the timeout reports of the ranks ("" when
// nothing says so): ranks whose watchdogs caught different collectives (OpType) disagree about the
// program, as PyTorch's desync report calls it; a start-up barrier that counted more workers than
// the world size was launched with more processes than the job has ranks. Neither is the network or
// a node.
std::string RecurringCollectiveTimeout(const std::vector<std::string>& lines) {
  std::set<std::string> ops;
  for (const auto& l : lines) {
    const std::string lower = Lower(l);
    if (lower.find("timed out") == std::string::npos &&
        lower.find("timeout") == std::string::npos) {
      continue;  // only the timeout reports themselves
    }
    const long world = IntAfter(l, "world_size="), workers = IntAfter(l, "worker_count=");
    if (world > 0 && workers > world) {
      return "the start-up barrier counted " + std::to_string(workers) +
             " workers for a world size of " + std::to_string(world) +
             ": more processes were launched than the job has ranks";
    }
    const size_t p = l.find("OpType=");
    if (p == std::string::npos) continue;
    size_t e = p + 7;
    while (e < l.size() && (std::isupper(static_cast<unsigned char>(l[e])) || l[e] == '_')) ++e;
    if (e > p + 7 && ops.size() < 8) ops.insert(l.substr(p + 7, e - p - 7));
  }
  if (ops.size() < 2) return "";
  return "the ranks timed out in different collectives (" +
         Join(std::vector<std::string>(ops.begin(), ops.end()), ", ") +
         "): they disagree about the program, and a re-run disagrees again";
}

std::string Summary(const Attribution& a, const FailureSignature* sig, const std::string& error,
                    int confidence) {
  std::string who;
  for (size_t i = 0; i < a.quoted.size(); ++i) {
    if (i > 0) who += (i + 1 == a.quoted.size()) ? " and " : ", ";
    who += a.quoted[i].first;
    if (!a.quoted[i].second.empty()) who += " " + a.quoted[i].second;
  }
  if (who.empty()) {
    who = sig != nullptr ? "no parameter (" + sig->key + ")" : "an unrecognized error";
  }
  return who + " caused " + error + " (Confidence: " + std::to_string(confidence) + ")";
}

// The last exception type in the log (the best guess of what ended the run) and its line; ""
// when no line names one.
std::string LastErrorType(const std::vector<std::string>& lines, size_t* at) {
  for (size_t i = lines.size(); i-- > 0;) {
    std::string type = FindErrorType(lines[i]);
    if (!type.empty()) {
      *at = i;
      return type;
    }
  }
  return "";
}

FailureDiagnosis Unmatched(const DiagnosisInput& in, const std::vector<std::string>& lines) {
  FailureDiagnosis d;
  d.category = ToString(FailureCategory::kUnknown);
  d.confidence = 20;
  std::string error = "exit code " + std::to_string(in.exit_code);
  size_t at = 0;
  std::string type = LastErrorType(lines, &at);
  if (!type.empty()) {
    error = type;
    d.evidence = EvidenceLine(lines[at]);
    d.confidence = 30;
  }
  d.summary = Summary({}, nullptr, error, d.confidence);
  return d;
}

// Whether the log names a GPU (its allocator, CUDA, "GPU") and nothing of a TPU. StreamExecutor's
// allocator ("Out of memory while trying to allocate N bytes", xla/stream_executor) serves GPUs:
// the TPU runtime words its out-of-memory otherwise (XLA's error pages: "Ran out of memory in
// memory space hbm", "Attempting to reserve ...", "Allocation ... would exceed memory").
bool NamesGpuNotTpu(const std::vector<std::string>& lines) {
  bool gpu = false;
  for (const auto& l : lines) {
    const std::string lower = Lower(l);
    for (const char* tpu : {"tpu", "hbm", "vmem", "tensorcore"}) {
      if (lower.find(tpu) != std::string::npos) return false;
    }
    gpu = gpu || lower.find("gpu") != std::string::npos ||
          lower.find("cuda") != std::string::npos ||
          lower.find("out of memory while trying to allocate") != std::string::npos;
  }
  return gpu;
}

// JAX and XLA raise a device out-of-memory as the same XlaRuntimeError RESOURCE_EXHAUSTED on
// GPUs and TPUs: the device decides which signature explains it. The trial's accelerator when
// the workload is known; else a TPU match is a GPU's when the log names a GPU and no TPU.
const FailureSignature* ForTheDevice(const KnowledgeBase& kb, const FailureSignature* sig,
                                     const DiagnosisInput& in,
                                     const std::vector<std::string>& lines) {
  const FailureCategory category = FailureCategoryOf(sig->category);
  const bool tpu_oom = category == FailureCategory::kTpuResourceExhausted;
  if (!tpu_oom && category != FailureCategory::kCudaOOM) return sig;
  bool gpu = false;
  if (in.workload != nullptr && in.workload->accel != nullptr) {
    gpu = !in.workload->IsTpu();
  } else if (tpu_oom) {
    gpu = NamesGpuNotTpu(lines);
  } else {
    return sig;  // a CUDA message and no workload: a GPU's
  }
  if (gpu != tpu_oom) return sig;  // the signature already names the device
  const FailureSignature* other = kb.FindSignature(gpu ? "cuda-oom" : "xla-hbm-exhausted");
  return other != nullptr ? other : sig;
}

// The last `n` lines of `text` (a trailing newline ends the last line, not a new one).
std::string LastLines(std::string text, size_t n) {
  size_t newlines = 0;
  for (size_t i = text.size(); i-- > 0;) {
    if (text[i] == '\n' && i + 1 < text.size() && ++newlines == n) {
      text.erase(0, i + 1);
      break;
    }
  }
  return text;
}

// The error a diagnosis without a signature names: the log's last exception type (its line
// becomes the evidence), else `fallback`.
std::string LastErrorOr(const std::vector<std::string>& lines, const std::string& fallback,
                        std::string* evidence) {
  size_t at = 0;
  std::string error = LastErrorType(lines, &at);
  if (error.empty()) return fallback;
  *evidence = EvidenceLine(lines[at]);
  return error;
}

// What the known failures are compared with: the events, the log's last lines, the pod reason.
std::string SimilarityQuery(const DiagnosisInput& in) {
  const std::string log =
      LastLines(in.log.size() > kSimilarQueryBytes ? Utf8Tail(in.log, kSimilarQueryBytes) : in.log,
                kSimilarQueryLines);
  return FailureText(in.events, log, in.pod_reason, in.exit_code);
}

// A diagnosis from the known failure most like the log: its category and retryable, no
// parameters, a confidence below any signature's that grows with the margin.
std::optional<FailureDiagnosis> FromSimilar(const KnowledgeBase& kb, const std::string& query,
                                            const std::vector<std::string>& lines) {
  auto similar = kb.MostSimilarFailure(query);
  if (!similar || similar->margin < kSimilarMargin || similar->score < kSimilarScore) {
    return std::nullopt;
  }
  const LabelledCase& known = *similar->known;
  FailureDiagnosis d;
  d.category = similar->category;
  d.retryable = similar->retryable;
  d.signature = FailureDiagnosis::kByVotePrefix + known.url;
  d.confidence = std::clamp(static_cast<int>(60 * similar->margin), 35, 60);
  const std::string error = LastErrorOr(lines, similar->category, &d.evidence);
  d.summary = "no parameter (a failure like " + known.url + ") caused " + error +
              " (Confidence: " + std::to_string(d.confidence) + ")";
  // The cited case's own labels (the diagnosis's retryable is all the voters').
  d.evidence += std::string(d.evidence.empty() ? "" : "\n") + "like " + known.url + " (" +
                known.category + (known.retryable.value_or(false) ? ", retryable" : "") + ")";
  return d;
}

// A diagnosis from the words of the log, when no known failure is close enough to cite: the
// category the known failures' vocabulary makes most probable, when it is a named one and the
// model is sure (posterior at least kWordsPosterior), with a confidence below the vote's. Not
// retryable, as when nothing explains the log: a guess from words is no reason to spend a trial
// on running the same thing again. The summary names the terms that decided.
std::optional<FailureDiagnosis> FromWords(const KnowledgeBase& kb, const std::string& query,
                                          const std::vector<std::string>& lines) {
  auto guess = kb.GuessCategoryFromWords(query);
  if (!guess || FailureCategoryOf(guess->category) == FailureCategory::kUnknown ||
      guess->posterior < kWordsPosterior) {
    return std::nullopt;
  }
  FailureDiagnosis d;
  d.category = guess->category;
  d.signature = FailureDiagnosis::kByWordsPrefix + guess->category;
  d.confidence = kWordsConfidence;
  const std::string error = LastErrorOr(lines, guess->category, &d.evidence);
  std::string terms;
  for (const auto& t : guess->terms) terms += (terms.empty() ? "" : ", ") + t;
  const std::string posterior = Fixed(guess->posterior, 2);
  d.summary = "no parameter (no signature or close known failure; its words are those of the " +
              std::to_string(guess->cases) + " known " + guess->category + " failures" +
              (terms.empty() ? "" : ": " + terms) + ", posterior " + posterior + ") caused " +
              error + " (Confidence: " + std::to_string(d.confidence) + ")";
  d.evidence += std::string(d.evidence.empty() ? "" : "\n") + "words like the known " +
                guess->category + " failures" + (terms.empty() ? "" : " (" + terms + ")");
  return d;
}

}  // namespace

Result<std::unique_ptr<Diagnostician>> Diagnostician::Create(const KnowledgeBase* kb) {
  if (kb == nullptr) return Status::Invalid("diagnostician: knowledge base is required");
  return std::unique_ptr<Diagnostician>(new Diagnostician(kb));
}

FailureDiagnosis Diagnostician::Diagnose(const DiagnosisInput& in) const {
  std::vector<std::string> lines = InputLines(in);
  // The exit code speaks only when nothing in the text does.
  Match cause = FindCause(kb_->signatures(), lines);
  if (cause.sig == nullptr && (in.exit_code == 137 || in.exit_code == 139)) {
    lines.push_back(in.exit_code == 137 ? "container exit code 137 (SIGKILL)"
                                        : "container exit code 139 (SIGSEGV)");
    cause = FindCause(kb_->signatures(), lines);
  }
  if (cause.sig == nullptr) {
    const std::string query = SimilarityQuery(in);
    if (auto similar = FromSimilar(*kb_, query, lines)) return *similar;
    if (auto words = FromWords(*kb_, query, lines)) return *words;
    return Unmatched(in, lines);
  }
  const FailureSignature& sig = *ForTheDevice(*kb_, cause.sig, in, lines);
  FailureDiagnosis d;
  d.category = sig.category;
  d.signature = sig.key;
  d.retryable = sig.retryable;
  Attribution a = Attribute(sig, lines, cause.line, in.config, WorkloadFields(in.workload));
  d.parameters = a.parameters;
  int conf = sig.confidence;
  if (a.confirmed) conf += 5;
  if (sig.attribution != "none" && d.parameters.empty()) conf -= 15;
  // A run that started and never progressed hung (worth one more run); one that progressed was
  // too slow, and a bare deadline (Kubernetes' report alone) is final, as the Job controller
  // treats it: neither is retryable.
  if (FailureCategoryOf(sig.category) == FailureCategory::kTimeout && ShowsStart(lines) &&
      !ShowsProgress(lines)) {
    d.retryable = true;
  }
  d.confidence = std::clamp(conf, 5, 99);
  size_t type_line = cause.line;
  // A failed assert's source line is followed by the exception line; other signatures name
  // the error on the matching line itself.
  const size_t lookahead = sig.attribution == "divisibility" ? 3 : 0;
  std::string error = ErrorType(lines, cause.line, lookahead,
                                sig.error_type.empty() ? sig.category : sig.error_type, &type_line);
  d.evidence = EvidenceLine(lines[cause.line]);
  if (type_line != cause.line) d.evidence += "\n" + EvidenceLine(lines[type_line]);
  d.summary = Summary(a, &sig, error, d.confidence);
  if (FailureCategoryOf(sig.category) == FailureCategory::kCollectiveTimeout && d.retryable) {
    const std::string recurs = RecurringCollectiveTimeout(lines);
    if (!recurs.empty()) {
      d.retryable = false;
      d.evidence += "\nnot retryable: " + recurs;
    }
  }
  return d;
}

}  // namespace paratune
