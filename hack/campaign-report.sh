#!/usr/bin/env bash
# The report of a campaign on a cluster: reads the TuningCampaign and its TrialRuns with kubectl
# ($KUBECONFIG), writes them in the `paratune simulate -o json` shape (campaign-result.json) and
# renders it with `paratune report --from` (Markdown, an SVG chart of the objective per
# iteration, and the past-optimization record `paratune propose --knowledge-dir` cites).
# Usage: hack/campaign-report.sh [-n NAMESPACE] CAMPAIGN [OUT_DIR]
#   OUT_DIR (default ./CAMPAIGN-report) receives campaign-result.json, report.md,
#   objective.svg and past-optimization.json; report.md is also printed.
# Env: PARATUNE_BIN, the paratune binary (default build/bin/paratune, else `paratune` on PATH).
# Exit 0 on success, 2 on bad usage, 1 when the campaign cannot be read or rendered.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ns_args=()
if [ "${1:-}" = -n ]; then ns_args=(-n "${2:?-n needs a namespace}"); shift 2; fi
[ $# -ge 1 ] || { echo "usage: hack/campaign-report.sh [-n NAMESPACE] CAMPAIGN [OUT_DIR]" >&2; exit 2; }
name=$1
out=${2:-$name-report}
bin=${PARATUNE_BIN:-$root/build/bin/paratune}
[ -x "$bin" ] || bin=$(command -v paratune || true)
[ -n "$bin" ] || { echo "campaign-report: no paratune binary (set PARATUNE_BIN)" >&2; exit 1; }
mkdir -p "$out"
kubectl "${ns_args[@]}" get tuningcampaign "$name" -o json >"$out/campaign.json"
kubectl "${ns_args[@]}" get trialruns -l "tuning.paratune.dev/campaign=$name" -o json >"$out/trials.json"
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
trs = json.load(open(d + "/trials.json"))["items"]
tc = json.load(open(d + "/campaign.json"))
metric_of = json.load(open(d + "/campaign.json"))["spec"].get("objective", {}).get("metric", "mfu")
def prediction(p):
    # The TrialRun's spec.prediction, with the campaign's objective as "objective" (the report's
    # "predicted" column), as the offline simulate JSON has it.
    p = dict(p or {})
    if metric_of in p and "objective" not in p:
        p["objective"] = p[metric_of]
    return p
def row(t):
    st = t.get("status", {})
    return {"name": t["metadata"]["name"], "iteration": t["spec"].get("iteration", 0),
            "config": t["spec"].get("config", {}), "phase": st.get("phase", "Pending"),
            "metrics": st.get("metrics", {}), "failure": st.get("failure"),
            "rationale": t["spec"].get("proposal", {}).get("rationale", ""),
            "prediction": prediction(t["spec"].get("prediction", {})),
            **({"queueSeconds": st["queueSeconds"]} if "queueSeconds" in st else {})}
trials = sorted((row(t) for t in trs), key=lambda r: r["iteration"])
by = {r["name"]: r for r in trials}
s = tc.get("status", {})
metric = tc["spec"].get("objective", {}).get("metric", "mfu")
def pick(key):
    r = dict(by.get(s.get(key, {}).get("trialName"), {}))
    if r:
        r["trialName"] = r["name"]
        r["objective"] = s[key].get("objective", 0)
        r["improvementOverBaseline"] = s[key].get("improvementOverBaseline", 0)
    return r
out = {"campaign": tc["metadata"]["name"], "trials": trials,
       "objective": {"metric": metric, "maximize": metric != "stepTimeSeconds"},
       "strategy": tc["spec"].get("agents", {}).get("engine", "builtin"),
       "trialCounts": s.get("trials", {}), "lastAnalysis": s.get("lastAnalysis", {}),
       "best": pick("best"), "baseline": pick("baseline")}
if s.get("baseline", {}).get("preflight"):
    out["baselinePreflight"] = s["baseline"]["preflight"]
spec = tc["spec"]
hw = dict(spec.get("hardware", {}))
hw.setdefault("nodes", 1)
hw.setdefault("devicesPerNode", 4 if hw.get("accelerator", "").startswith("tpu-") else 8)
out["workload"] = {"model": spec.get("model", {}), "training": spec.get("training", {}),
                   "hardware": hw}
json.dump(out, open(d + "/campaign-result.json", "w"), indent=1)
PY
rm -f "$out/campaign.json" "$out/trials.json"
"$bin" report --from "$out/campaign-result.json" --out "$out" >&2
cat "$out/report.md"
