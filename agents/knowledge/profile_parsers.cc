#include "agents/knowledge/profile_parsers.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "base/strings.h"

namespace paratune {

namespace {

constexpr size_t kTopOps = 20;

bool ParseNumber(const std::string& text, double* out) {
  std::string t = Trim(text, " \t\r\"");
  t.erase(std::remove(t.begin(), t.end(), ','), t.end());
  if (!t.empty() && t.back() == '%') t.pop_back();
  if (t.empty()) return false;
  try {
    size_t used = 0;
    *out = std::stod(t, &used);
    return used == t.size();
  } catch (...) {
    return false;
  }
}

// A guess where the format carries none: GEMMs and attention are compute-bound, collectives wait
// on links, the rest streams HBM.
std::string GuessBottleneck(const ProfileOp& op) {
  if (op.IsCollective()) return "unknown";
  if (op.category == "matmul" || op.category == "attention") return "compute";
  return "hbm";
}

// Merges ops by name, normalizes fractions against `total` when given (> 0), sorts, keeps the
// top ones and sets the communication fraction.
ProfileSummary Finish(std::vector<ProfileOp> ops, double total) {
  std::map<std::string, ProfileOp> merged;
  for (auto& op : ops) {
    auto [it, fresh] = merged.emplace(op.name, op);
    if (!fresh) it->second.time_fraction += op.time_fraction;
  }
  ProfileSummary p;
  for (auto& [name, op] : merged) {
    if (total > 0) op.time_fraction /= total;
    op.time_fraction = std::clamp(op.time_fraction, 0.0, 1.0);
    if (op.bottleneck == "unknown" || op.bottleneck.empty()) op.bottleneck = GuessBottleneck(op);
    if (op.IsCollective()) p.communication_fraction += op.time_fraction;
    p.top_ops.push_back(op);
  }
  p.communication_fraction = std::min(1.0, p.communication_fraction);
  std::stable_sort(p.top_ops.begin(), p.top_ops.end(),
                   [](const auto& a, const auto& b) { return a.time_fraction > b.time_fraction; });
  if (p.top_ops.size() > kTopOps) p.top_ops.resize(kTopOps);
  return p;
}

ProfileOp NamedOp(const std::string& name, double amount) {
  ProfileOp op;
  op.name = name;
  op.category = CategorizeOpName(name);
  op.time_fraction = amount;
  return op;
}

// Column ranges [begin, end) from a "-----  -----" separator line.
std::vector<std::pair<size_t, size_t>> Columns(const std::string& dashes) {
  std::vector<std::pair<size_t, size_t>> cols;
  size_t i = 0;
  while ((i = dashes.find('-', i)) != std::string::npos) {
    size_t e = dashes.find(' ', i);
    if (e == std::string::npos) e = dashes.size();
    cols.emplace_back(i, e);
    i = e;
  }
  return cols;
}

}  // namespace

bool ParseDurationText(const std::string& text, double* seconds) {
  std::string t = Trim(text, " \t\r\"");
  static const std::pair<const char*, double> kUnits[] = {
      {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};
  for (const auto& [unit, scale] : kUnits) {
    std::string u(unit);
    if (t.size() > u.size() && t.compare(t.size() - u.size(), u.size(), u) == 0) {
      double v = 0;
      if (!ParseNumber(t.substr(0, t.size() - u.size()), &v)) return false;
      *seconds = v * scale;
      return true;
    }
  }
  return false;
}

// Cells of a table row: runs of two or more spaces separate columns; the name (first column)
// may itself be truncated or overflow its column, so the numeric columns are taken from the right.
std::vector<std::string> RowCells(const std::string& line, size_t columns) {
  std::vector<std::string> cells;
  size_t end = line.find_last_not_of(' ');
  while (end != std::string::npos && cells.size() + 1 < columns) {
    size_t gap = line.rfind("  ", end);
    if (gap == std::string::npos) break;
    cells.insert(cells.begin(), Trim(line.substr(gap + 2, end - gap - 1), " \t\r\""));
    end = line.find_last_not_of(' ', gap);
  }
  if (end == std::string::npos) return {};
  cells.insert(cells.begin(), Trim(line.substr(0, end + 1), " \t\r\""));
  return cells;
}

Result<ProfileSummary> ParsePytorchTable(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  size_t header = lines.size();
  for (size_t i = 1; i < lines.size() && header == lines.size(); ++i) {
    if (lines[i].find("Name") != std::string::npos && lines[i - 1].find("---") == 0) header = i;
  }
  if (header == lines.size() || header + 1 >= lines.size()) {
    return Status::Invalid("profile (pytorch-table): no key_averages table header found");
  }
  const size_t ncols = Columns(lines[header - 1]).size();
  std::vector<std::string> names = RowCells(lines[header], ncols);
  int self_col = -1, cpu_total_col = -1;
  for (size_t c = 0; c < names.size(); ++c) {
    const std::string& h = names[c];
    if (h == "Self CUDA" || h == "Self Device" || h == "Self XPU") self_col = static_cast<int>(c);
    if (h == "CPU total") cpu_total_col = static_cast<int>(c);
  }
  if (names.empty() || names[0] != "Name" || self_col < 0) {
    return Status::Invalid(
        "profile (pytorch-table): needs the Name and Self CUDA columns "
        "(profile with ProfilerActivity.CUDA)");
  }
  std::vector<ProfileOp> ops, kernels;
  for (size_t i = header + 2; i < lines.size() && lines[i].find("---") != 0; ++i) {
    std::vector<std::string> cells = RowCells(lines[i], ncols);
    if (cells.size() != ncols) continue;
    double self = 0, cpu_total = 1;
    if (!ParseDurationText(cells[self_col], &self) || self <= 0) continue;
    if (cpu_total_col >= 0) ParseDurationText(cells[cpu_total_col], &cpu_total);
    // Kernel rows (no CPU time) carry device time exclusively; operator rows repeat it.
    (cpu_total == 0 ? kernels : ops).push_back(NamedOp(cells[0], self));
  }
  std::vector<ProfileOp>& use = kernels.empty() ? ops : kernels;
  if (use.empty()) return Status::Invalid("profile (pytorch-table): no row with device time");
  double total = 0;
  for (const auto& op : use) total += op.time_fraction;
  return Finish(use, total);
}

Result<ProfileSummary> ParseChromeTrace(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::Invalid("profile (pytorch-trace): not valid JSON");
  const nlohmann::json& events = j.is_object() && j.contains("traceEvents") ? j["traceEvents"] : j;
  if (!events.is_array())
    return Status::Invalid("profile (pytorch-trace): traceEvents: must be a list");
  std::vector<ProfileOp> ops;
  std::vector<std::pair<double, double>> busy;  // kernel intervals, us
  double steps_total = 0, first = 1e300, last = -1e300;
  int steps = 0;
  for (const auto& e : events) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    std::string cat = e.value("cat", ""), name = e.value("name", "");
    double ts = e.value("ts", 0.0), dur = e.value("dur", 0.0);
    std::transform(cat.begin(), cat.end(), cat.begin(), ::tolower);
    if (name.rfind("ProfilerStep#", 0) == 0) {
      steps_total += dur;
      ++steps;
      first = std::min(first, ts);
      last = std::max(last, ts + dur);
    } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      ops.push_back(NamedOp(name, dur));
      busy.emplace_back(ts, ts + dur);
    }
  }
  if (ops.empty()) return Status::Invalid("profile (pytorch-trace): no kernel events (cat kernel)");
  std::sort(busy.begin(), busy.end());
  double union_us = 0, end = -1e300, kmin = busy.front().first, kmax = -1e300;
  for (const auto& [b, e] : busy) {
    if (b > end) {
      union_us += e - b;
    } else if (e > end) {
      union_us += e - end;
    }
    end = std::max(end, e);
    kmax = std::max(kmax, e);
  }
  double total = 0;
  for (const auto& op : ops) total += op.time_fraction;
  ProfileSummary p = Finish(ops, total);
  double span = steps > 0 ? last - first : kmax - kmin;
  if (steps > 0) p.step_time_seconds = steps_total / steps * 1e-6;
  // Kernels of several streams overlap; the union over the window is the busy time.
  if (span > 0) p.device_duty_cycle = std::min(1.0, union_us / span);
  return p;
}

}  // namespace paratune
