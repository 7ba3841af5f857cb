// AsPrinted (framework_log.h): what a simulated trial's pod prints beyond the plain progress
// lines. Formats cited from the frameworks' sources:
//   - Megatron-LM training.py training_log / evaluate_and_print_results
//     (NVIDIA/Megatron-LM@d98e8a6): the throughput field only under --log-throughput; the
//     validation block `validation loss at iteration N | lm loss value: ... | lm loss PPL: ...`
//     between two dash lines.
//   - MaxText metric_logger.py (AI-Hypercomputer/maxtext@e591f30): `completed step:` per step;
//     `eval metrics after step: N, loss=..., total_weights=...`.
//   - the Hugging Face Trainer: log dicts, the tqdm bar, the train_runtime summary.
//   - torchtitan components/metrics.py (pytorch/torchtitan@b5bcd76): `step:` and
//     `validate step:` lines, printed by every rank under torchrun (`[rankN]:` prefix).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "agents/sim/framework_log.h"
#include "base/strings.h"

namespace paratune::sim {

namespace {

int64_t IntAfter(const std::string& line, const std::string& label) {
  const size_t pos = line.find(label);
  if (pos == std::string::npos) return -1;
  return std::atoll(line.c_str() + pos + label.size());
}

double DoubleAfter(const std::string& line, const std::string& label) {
  const size_t pos = line.find(label);
  if (pos == std::string::npos) return 0;
  return std::atof(line.c_str() + pos + label.size());
}

// torchtitan prints tokens/s with thousands separators ("3,255").
double NumberWithCommas(const std::string& line, const std::string& label) {
  const size_t pos = line.find(label);
  if (pos == std::string::npos) return 0;
  std::string digits;
  for (size_t i = pos + label.size(); i < line.size(); ++i) {
    const char c = line[i];
    if (c == ',') continue;
    if ((c < '0' || c > '9') && c != '.') break;
    digits.push_back(c);
  }
  return std::atof(digits.c_str());
}

std::string Megatron(const PrintOptions& o, const std::string& line) {
  if (o.log_throughput) return line;
  const std::string field = " throughput per GPU (TFLOP/s/GPU): ";
  const size_t pos = line.find(field);
  if (pos == std::string::npos) return line;
  const size_t end = line.find('|', pos + field.size());
  return end == std::string::npos ? line : line.substr(0, pos) + line.substr(end + 1);
}

// Step 1 measured before step 0's dispatch completed: 6% of a step.
std::string MaxTextDispatchArtefact(const std::string& line) {
  constexpr double kFraction = 0.06;
  const double seconds = DoubleAfter(line, "seconds: ");
  const double tflops = DoubleAfter(line, "TFLOP/s/device: ");
  const double tokens = DoubleAfter(line, "Tokens/s/device: ");
  const size_t tail = line.find(", total_weights:");
  if (seconds <= 0 || tail == std::string::npos) return line;
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "completed step: 1, seconds: %.3f, TFLOP/s/device: %.3f, Tokens/s/device: %.3f",
                seconds * kFraction, tflops / kFraction, tokens / kFraction);
  return buf + line.substr(tail);
}

std::vector<std::string> TorchtitanRanks(const Workload& w, const RankView& v,
                                         const PrintOptions& o, const std::string& line) {
  if (!o.every_rank) return {line};
  const int64_t per_node = std::max<int64_t>(1, std::min(w.DevicesPerNode(), w.devices));
  std::vector<std::string> out;
  for (int64_t r = v.node_rank * per_node; r < (v.node_rank + 1) * per_node; ++r) {
    out.push_back("[rank" + std::to_string(r) + "]:" + line);
  }
  return out;
}

// The Hugging Face Trainer's output for one logged interval (trainer.py _maybe_log_save_evaluate
// and ProgressCallback, huggingface/transformers@c599e98): the log dict (no time), the tqdm bar
// with its rate, and after the last step the train_runtime summary. Built from the simulated
// run's Megatron-style line, which carries the numbers.
std::vector<std::string> HfTrainer(const std::string& line) {
  const int64_t it = IntAfter(line, "] iteration ");
  const size_t slash = line.find('/', line.find("] iteration "));
  const int64_t total = slash == std::string::npos ? 0 : std::atoll(line.c_str() + slash + 1);
  const double step = DoubleAfter(line, "elapsed time per iteration (ms): ") / 1000.0;
  const double loss = DoubleAfter(line, "lm loss: ");
  const int64_t gbs = IntAfter(line, "global batch size: ");
  if (it <= 0 || total <= 0 || step <= 0) return {};
  char buf[512];
  std::vector<std::string> out;
  std::snprintf(buf, sizeof(buf),
                "{'loss': %.4f, 'grad_norm': %.4f, 'learning_rate': %.6g, "
                "'epoch': %.2f}",
                loss, DoubleAfter(line, "grad norm: "), DoubleAfter(line, "learning rate: "),
                static_cast<double>(it) / total);
  out.emplace_back(buf);
  const int pct = static_cast<int>(100 * it / total);
  const auto clock = [](double seconds) {
    char t[32];
    const auto sec = static_cast<int64_t>(seconds);
    std::snprintf(t, sizeof(t), "%02lld:%02lld", static_cast<long long>(sec / 60),
                  static_cast<long long>(sec % 60));
    return std::string(t);
  };
  std::string bar(static_cast<size_t>(pct / 10), '#');
  bar.resize(10, ' ');
  std::string rate = step >= 1 ? Fixed(step, 2) + "s/it" : Fixed(1 / step, 2) + "it/s";
  out.push_back(std::to_string(pct) + "%|" + bar + "| " + std::to_string(it) + "/" +
                std::to_string(total) + " [" + clock(step * it) + "<" + clock(step * (total - it)) +
                ", " + rate + "]");
  if (it == total) {
    std::snprintf(buf, sizeof(buf),
                  "{'train_runtime': %.4f, 'train_samples_per_second': %.3f, "
                  "'train_steps_per_second': %.3f, 'train_loss': %.4f, 'epoch': 1.0}",
                  step * total, static_cast<double>(gbs) / step, 1.0 / step, loss + 0.3);
    out.emplace_back(buf);
  }
  return out;
}

}  // namespace

std::vector<std::string> AsPrinted(const Workload& w, const RankView& v, const PrintOptions& o,
                                   const std::string& line) {
  char buf[320];
  if (w.IsTpu()) {
    const int64_t step = IntAfter(line, "completed step: ");
    if (step == 1) return {MaxTextDispatchArtefact(line)};
    if (step == 5) {
      std::snprintf(buf, sizeof(buf), "eval metrics after step: 5, loss=%.3f, total_weights=%lld",
                    DoubleAfter(line, "loss: ") + 0.05,
                    static_cast<long long>(IntAfter(line, "total_weights: ")));
      return {line, buf};
    }
    return {line};
  }
  if (line.find(" - step: ") != std::string::npos) {
    std::vector<std::string> out = TorchtitanRanks(w, v, o, line);
    const int64_t step = IntAfter(line, " - step: ");
    if (step > 0 && step % 20 == 0) {
      // Validation runs forward only: more tokens/s than the training step.
      std::snprintf(buf, sizeof(buf), " - validate step: %2lld  loss: %7.4f  tps: %lld",
                    static_cast<long long>(step), DoubleAfter(line, "loss: ") + 0.04,
                    static_cast<long long>(1.25 * NumberWithCommas(line, "tps: ")));
      for (auto& l : TorchtitanRanks(w, v, o, line.substr(0, line.find(" - step: ")) + buf)) {
        out.push_back(l);
      }
    }
    return out;
  }
  if (line.find("elapsed time per iteration (") == std::string::npos) return {line};
  if (w.training.framework == "transformers") return HfTrainer(line);
  std::vector<std::string> out = {Megatron(o, line)};
  const int64_t it = IntAfter(line, "] iteration ");
  const size_t slash = line.find('/', line.find("] iteration "));
  const int64_t total = slash == std::string::npos ? -1 : std::atoll(line.c_str() + slash + 1);
  if (it > 0 && it == total) {
    const std::string dashes(100, '-');
    std::snprintf(buf, sizeof(buf),
                  " validation loss at iteration %lld on validation set | lm loss value: "
                  "%.6E | lm loss PPL: %.6E | ",
                  static_cast<long long>(it), 4.3, 73.7);
    out.insert(out.end(), {dashes, buf, dashes});
  }
  return out;
}

}  // namespace paratune::sim
