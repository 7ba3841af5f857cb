#!/usr/bin/env bash
# The layer rules of docs/architecture.md, checked on the source tree: prints each breach and
# exits 1 when there is one. Usage: check_layers.sh SOURCE_DIR
set -uo pipefail
cd "${1:-.}"
fail=0
breach() { echo "layer rule broken: $1"; echo "$2" | sed 's/^/  /'; fail=1; }
hits=$(grep -rln '#include "\(agents\|operator\|controllers\|cli\)/' base 2>/dev/null)
[ -n "$hits" ] && breach "base/ includes nothing of ours" "$hits"
hits=$(grep -ln '#include "\(agents\|controllers\)/' operator/*.cc operator/*.h 2>/dev/null)
[ -n "$hits" ] && breach "the runtime (operator/) never includes agents/ or controllers/" "$hits"
hits=$(grep -rln '#include "\(operator\|controllers\)/' agents 2>/dev/null)
[ -n "$hits" ] && breach "agents/ never includes the runtime or controllers/" "$hits"
# The layers inside agents/ (docs/architecture.md), bottom to top: each folder may include only
# the folders listed for it (what its CMake library links, directly or through another), so no
# include runs back up a layer. A new folder of agents/ needs a line here.
declare -A may_include=(
  [core]=""
  [report]=""
  [model]="core"
  [llm]="core"
  [collectors]="core"
  [knowledge]="core model"
  [health]="core model"
  [sim]="core model health"
  [trials]="core model health knowledge"
  [predict]="core model health knowledge trials"
  [engines]="core model health knowledge trials predict report llm"
  [session]="core model health knowledge trials predict report llm engines collectors"
  [sim_campaign]="core model health knowledge trials predict report llm engines collectors session sim"
)
for dir in agents/*/; do
  folder=$(basename "$dir")
  if [ -z "${may_include[$folder]+set}" ]; then
    breach "every folder of agents/ has its place in the layers" "agents/$folder/"
    continue
  fi
  allowed="$folder ${may_include[$folder]}"
  hits=$(grep -rnoE '#include "agents/[a-z_]+/' "$dir" 2>/dev/null | while IFS= read -r line; do
    target=${line##*#include \"agents/}
    target=${target%/}
    case " $allowed " in *" $target "*) ;; *) echo "$line\" (agents/$folder may include: ${may_include[$folder]:-nothing of agents/})" ;; esac
  done)
  [ -n "$hits" ] && breach "an include runs back up the layers of agents/" "$hits"
done
# No folder of agents/ holds more than a quarter of its lines (a folder that grows past it is
# split by what it does).
total=$(find agents -name '*.cc' -o -name '*.h' | xargs cat | wc -l)
for dir in agents/*/; do
  lines=$(find "$dir" -name '*.cc' -o -name '*.h' | xargs cat 2>/dev/null | wc -l)
  [ $((lines * 4)) -gt "$total" ] && breach "no folder of agents/ holds more than a quarter of its lines" "$dir: $lines of $total"
done
hits=$(grep -rln '#include "controllers/' cli hack cmd 2>/dev/null | grep -v '^cmd/paratune-operator/')
[ -n "$hits" ] && breach "only the operator program includes controllers/" "$hits"
# Each program's main.cc is in cmd/<program>/, and no one includes a program.
hits=$(find base agents operator controllers cli hack testing -name main.cc 2>/dev/null)
[ -n "$hits" ] && breach "programs' mains live in cmd/<program>/" "$hits"
hits=$(grep -rln --include=*.cc --include=*.h '#include "cmd/' base agents operator controllers cli hack testing tests bench fuzz 2>/dev/null)
[ -n "$hits" ] && breach "nothing includes cmd/ (the programs are the top of the house)" "$hits"
# Test code (testing/: fakes, evaluation harnesses, published tables) is linked by tests/ and
# bench/ only; no product folder includes it.
hits=$(grep -rln '#include "testing/' base agents operator controllers cli cmd hack/kubelet-sim 2>/dev/null)
[ -n "$hits" ] && breach "product code never includes testing/ (test code, for tests/ and bench/)" "$hits"
hits=$(find base agents operator controllers cli -type d -name testing 2>/dev/null)
[ -n "$hits" ] && breach "test doubles live in testing/, not inside a product library's folder" "$hits"
hits=$(grep -rn 'getenv' --include=*.cc --include=*.h base agents controllers operator testing 2>/dev/null)
[ -n "$hits" ] && breach "only the programs read the environment" "$hits"
hits=$(grep -rnE 'Base64Decode\(const|DecodeBase64\(|ParseMiniYaml' --include=*.cc base agents controllers operator cli hack cmd 2>/dev/null | grep -v '^base/')
[ -n "$hits" ] && breach "one copy of each helper, in base/" "$hits"
# One copy of each helper: the text helpers, number formatters and JSON getters of base/strings.h
# and base/json_fields.h (and the private names they replaced: Round2..Round6, Pct, Fmt, F,
# Tail, Number) are defined there only.
helpers='F|Trim|Lower|ToLower|Num|Number|Fixed|SignedFixed|Significant|Percent|SignedPercent|Pct|Fmt|RoundTo|Round[0-9]|Tail|LastLinesWithin|ValueField|ObjectField|ArrayField|StringField|NumberField'
hits=$(grep -rnE "^ *(static |inline )*(const )?[A-Za-z_][A-Za-z_:<>]*[&*]? ($helpers)\(" --include=*.cc --include=*.h agents controllers operator cli hack cmd testing bench 2>/dev/null |
  grep -vE ':[0-9]+: *(return|else|case|throw|co_return) ')
[ -n "$hits" ] && breach "one copy of each helper, in base/ (strings.h, json_fields.h)" "$hits"
# No configuration or state in function-level statics (nor class statics): what a component
# needs is passed in (the LLM overrides and key, the engine factory, the clock, the failure
# analyzer). Allowed: const and constexpr tables; the programs' main.cc; the process clock
# (stateless); once-flags of process-wide library set-up; the signal handlers' stop source
# (signals are process-wide); the CLI's command table (filled by registrars, code only).
hits=$(grep -rnE '^\s+static ' --include=*.cc --include=*.h base agents operator controllers cli 2>/dev/null |
  grep -vE ':[0-9]+:\s+static (const|constexpr|inline constexpr)\b' |
  grep -vE 'static [^=;]*\b[A-Za-z_0-9]+\(' |
  grep -vE '^cmd/[^:]*/main\.cc:|^base/time_source\.cc:.*static RealTimeSource instance;|static std::once_flag once;|^operator/manager\.cc:.*static std::stop_source source;|^cli/command\.cc:.*static std::map<std::string, Command> registry;')
[ -n "$hits" ] && breach "no static configuration or state in functions: pass it in" "$hits"
# One clock (base/time_source.h). Allowed direct reads: the programs (cmd/), the test doubles
# (testing/), both not scanned, waits
# for another thread's I/O (an informer's first sync, a cached write showing up) and timing
# the code itself (reconcile metrics, the simulation's wall time).
hits=$(grep -rnE 'std::this_thread::sleep_for|std::chrono::(steady|system)_clock::now\(\)' --include=*.cc --include=*.h agents controllers operator 2>/dev/null |
  grep -vE '^(operator/informer\.cc|operator/controller\.cc|controllers/config_map_cache\.cc|agents/sim_campaign/simulation\.cc):')
[ -n "$hits" ] && breach "time is read from the TimeSource a component is given" "$hits"
# A private number formatter by another name (printf of one double into a buffer).
hits=$(grep -rnE 'snprintf\(buf, sizeof\(buf\), "%[+.0-9*]*[fg]", (digits, )?v\);|snprintf\([a-z_]+, sizeof\(?[a-z_]+\)?, "([^"%]|%%)*%[+.0-9*]*[fg]([^"%]|%%)*",' --include=*.cc agents controllers operator cli hack cmd 2>/dev/null)
[ -n "$hits" ] && breach "numbers are formatted with base/strings (Fixed, SignedFixed, Significant)" "$hits"
# A TrialRun's or TuningCampaign's phase only through its typed mapping; trial_evidence.cc reads
# Pods' own phase (Kubernetes').
hits=$(grep -rn '"phase"' controllers 2>/dev/null | grep -v '^controllers/\(trial_run_status\|campaign_status\|trial_evidence\)\.cc:')
[ -n "$hits" ] && breach "status phases are read and written through trial_run_status.h / campaign_status.h" "$hits"
[ "$fail" = 0 ] && echo "layers: OK"
exit $fail
