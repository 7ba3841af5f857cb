// The collectors against real framework output (issue 35): every excerpt of
// tests/collectors/corpus/{dev,heldout} (a .log quoted from a public source and a .yaml with the
// values a person reads off it; corpus/README.md) is read by the collector its yaml names, as
// the operator would with no campaign (nothing derived from a batch shape the log does not
// print). Per half: excerpts, metrics parsed (every value the person read is produced), step time
// / tokens/s / TFLOP/s within 2% of the reading (count and mean |error|), memory read where the
// log prints it, and step-time anomaly alarms raised on healthy logs. Each half is reported per
// collection (corpus/README.md: collection 1, collection 2 gathered after collection 1 was
// measured, each later one after those before it) and in total. The dev half lists its misses
// on stderr (the collectors were developed against it); with --dev-detail it prints every dev
// excerpt's values. The held-out half reports aggregate figures only, never an excerpt. Prints
// Markdown to stdout; exit 1 only when it could not measure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "agents/collectors/metric_collector.h"
#include "agents/health/anomaly.h"
#include "base/strings.h"
#include "base/yaml.h"

namespace paratune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kTolerance = 0.02;

struct Check {
  int n = 0, within = 0;
  double sum_err = 0;
  void Add(double got, double want) {
    ++n;
    const double err = want > 0 ? std::abs(got - want) / want : 1.0;
    sum_err += std::min(err, 10.0);
    if (err <= kTolerance) ++within;
  }
  std::string Text() const {
    if (n == 0) return "-";
    return std::to_string(within) + "/" + std::to_string(n) + " (mean abs err " +
           Fixed(100.0 * sum_err / n, 2) + "%)";
  }
};

struct Half {
  int excerpts = 0, with_reading = 0, parsed = 0, no_reading = 0, no_reading_metrics = 0;
  int healthy = 0, alarms = 0, errors = 0;
  Check step, tokens, tflops, mfu, memory;
  std::vector<std::string> misses;
};

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

double Reading(const json& r, const char* key) {
  return r.contains(key) && r[key].is_number() ? r[key].get<double>() : 0.0;
}

void Score(const std::string& name, const json& y, const std::string& log, Half* h,
           bool detail_all) {
  const std::string collector = y.value("collector", "");
  const json reading = y.value("reading", json::object());
  ++h->excerpts;
  auto c = collectors::CollectLogWithStepTimes(collector, log, {});
  if (!c.ok() && c.status().code() != StatusCode::kNotFound) {
    ++h->errors;
    h->misses.push_back(name + ": " + c.status().message());
    return;
  }
  TrialMetrics m = c.ok() ? c->metrics : TrialMetrics{};
  if (!c.ok()) {  // memory lines alone are read without step lines
    auto mem = collectors::MemoryFromLog(collector, log);
    m.peak_memory_gib = mem.peak_gib;
  }
  const std::pair<const char*, double> fields[] = {
      {"step_time_s", m.step_time_seconds},
      {"tokens_per_s_per_device", m.tokens_per_second_per_device},
      {"tflops_per_device", m.tflops_per_device},
      {"mfu", m.mfu},
      {"peak_memory_gib", m.peak_memory_gib}};
  Check* checks[] = {&h->step, &h->tokens, &h->tflops, &h->mfu, &h->memory};
  bool any = false, all = true;
  std::string detail;
  for (size_t i = 0; i < 5; ++i) {
    const double want = Reading(reading, fields[i].first);
    if (want <= 0) continue;
    any = true;
    checks[i]->Add(fields[i].second, want);
    if (fields[i].second <= 0) all = false;
    if (std::abs(fields[i].second - want) > kTolerance * want) {
      detail += std::string(" ") + fields[i].first + " " + Significant(fields[i].second, 5) +
                " vs " + Significant(want, 5) + ";";
    }
  }
  if (any) {
    ++h->with_reading;
    if (all) ++h->parsed;
  } else {
    ++h->no_reading;
    if (c.ok()) ++h->no_reading_metrics;
  }
  if (y.value("healthy", false) && c.ok()) {
    ++h->healthy;
    if (auto a = health::DetectStepTimeAnomaly(c->step_times, {}, c->warmup_intervals)) {
      ++h->alarms;
      detail += std::string(" alarm ") + health::AnomalyKindName(a->kind) + ";";
    }
  }
  if (!detail.empty()) h->misses.push_back(name + ":" + detail);
  if (detail_all) {
    std::string line = name + ":";
    for (size_t i = 0; i < 5; ++i) {
      const double want = Reading(reading, fields[i].first);
      if (want <= 0 && fields[i].second <= 0) continue;
      line += std::string(" ") + fields[i].first + " " + Significant(fields[i].second, 5) +
              " (reading " + (want > 0 ? Significant(want, 5) : std::string("-")) + ");";
    }
    if (!c.ok()) line += " [" + c.status().message() + "]";
    std::printf("    %s\n", line.c_str());
  }
}

// The highest `collection:` of the excerpts under `dirs` (no field: 1).
Result<int> LastCollection(const std::vector<fs::path>& dirs) {
  int last = 1;
  for (const auto& dir : dirs) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".yaml") continue;
      auto parsed = YamlToJson(ReadText(e.path()));
      if (!parsed.ok()) return parsed.status().WithPrefix(e.path().string());
      last = std::max(last, parsed->value("collection", 1));
    }
  }
  return last;
}

// collection 0: every excerpt; otherwise only those of that collection (no field: 1).
// The excerpts of one half: of one collection (0: all) and read by one collector ("": any).
Result<Half> RunHalf(const fs::path& dir, int collection, bool detail,
                     const std::string& collector = "") {
  Half h;
  if (!fs::is_directory(dir)) return h;
  std::vector<fs::path> yamls;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".yaml") yamls.push_back(e.path());
  }
  std::sort(yamls.begin(), yamls.end());
  for (const auto& y : yamls) {
    auto parsed = YamlToJson(ReadText(y));
    if (!parsed.ok()) return parsed.status().WithPrefix(y.string());
    const int c = parsed->value("collection", 1);
    if (collection != 0 && c != collection) continue;
    if (!collector.empty() && parsed->value("collector", std::string()) != collector) continue;
    fs::path log = y;
    log.replace_extension(".log");
    Score(y.stem().string(), *parsed, ReadText(log), &h, detail);
  }
  return h;
}

void Print(const char* name, const Half& h, bool list_misses) {
  std::printf("| %s | %d | %d/%d (%s%%) | %s | %s | %s | %s | %s | %d/%d | %d |\n", name,
              h.excerpts, h.parsed, h.with_reading,
              h.with_reading ? Fixed(100.0 * h.parsed / h.with_reading, 1).c_str() : "-",
              h.step.Text().c_str(), h.tokens.Text().c_str(), h.tflops.Text().c_str(),
              h.mfu.Text().c_str(), h.memory.Text().c_str(), h.alarms, h.healthy, h.errors);
  if (!list_misses) return;
  for (const auto& m : h.misses) std::fprintf(stderr, "  dev miss: %s\n", m.c_str());
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) {
  using namespace paratune;
  const bool dev_detail = argc > 1 && std::string(argv[1]) == "--dev-detail";
  const fs::path root = fs::path(PARATUNE_SOURCE_DIR) / "tests/collectors/corpus";
  auto last = LastCollection({root / "dev", root / "heldout"});
  if (!last.ok()) {
    std::cerr << last.status().ToString() << "\n";
    return 1;
  }
  if (dev_detail) {
    for (int c = 1; c <= *last; ++c) {
      std::printf("dev, collection %d:\n", c);
      if (auto d = RunHalf(root / "dev", c, true); !d.ok()) {
        std::cerr << d.status().ToString() << "\n";
        return 1;
      }
    }
    return 0;
  }
  std::vector<std::pair<std::string, Result<Half>>> rows;
  for (const char* half : {"dev", "heldout"}) {
    std::vector<int> collections;
    for (int c = 1; c <= *last; ++c) collections.push_back(c);
    collections.push_back(0);
    for (int c : collections) {
      std::string name = std::string(half == std::string("dev") ? "dev" : "held-out") +
                         (c == 0 ? " (all)" : " c" + std::to_string(c));
      rows.emplace_back(name, RunHalf(root / half, c, false));
      if (!rows.back().second.ok()) {
        std::cerr << rows.back().second.status().ToString() << "\n";
        return 1;
      }
    }
  }
  std::printf("## Collectors on real framework output (collectors_corpus_bench)\n\n");
  std::printf(
      "Excerpts of tests/collectors/corpus (real log lines quoted from public sources, with the "
      "values a person reads off them), read by the collector each names with no campaign "
      "context. Parsed: every value the person read is produced. Within 2%%: count of excerpts "
      "with that reading. Alarms: StepTimeDrift/StepTimeSpikes raised on logs marked healthy. "
      "Excerpts without a reading (memory-only, warm-up-only, summary-only) count only in the "
      "excerpts column. c1: collection 1, c2: collection 2 (gathered after c1 was measured), c3: "
      "collection 3 (gathered after c1 and c2 were), c4, c5, ...: each gathered after the "
      "ones before it were measured (corpus/README.md).\n\n");
  std::printf(
      "| half | excerpts | parsed | step time within 2%% | tokens/s within 2%% | "
      "TFLOP/s within 2%% | MFU within 2%% | memory within 2%% | alarms on healthy | "
      "errors |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& [name, h] : rows) {
    // Dev misses are listed once, under the all-collections row.
    Print(name.c_str(), *h, name == "dev (all)");
  }
  // The same totals per collector (where a half falls short, by whose output).
  std::printf(
      "\nPer collector, all collections:\n\n"
      "| half, collector | excerpts | parsed | step time within 2%% | tokens/s within 2%% | "
      "TFLOP/s within 2%% | MFU within 2%% | memory within 2%% | alarms on healthy | "
      "errors |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const char* half : {"dev", "heldout"}) {
    for (const char* collector :
         {"megatron-lm", "megatron-bridge", "maxtext", "torchtitan", "hf-trainer", "json"}) {
      auto h = RunHalf(root / half, 0, false, collector);
      if (!h.ok()) {
        std::cerr << h.status().ToString() << "\n";
        return 1;
      }
      if (h->excerpts == 0) continue;
      const std::string name =
          std::string(half == std::string("dev") ? "dev" : "held-out") + ", " + collector;
      Print(name.c_str(), *h, false);
    }
  }
  std::printf("\n");
  return 0;
}
