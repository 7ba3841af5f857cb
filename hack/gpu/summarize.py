#!/usr/bin/env python3
"""One summary of hack/gpu/real-campaign.sh's results in DIR (tune.json, sweep.json,
diagnose.json): trials, OOMs, the tuner's best against the exhaustive sweep's best, diagnostic
verdicts, and issue 37's criteria. Usage: summarize.py DIR MODE. Exit 1 when a result is missing
or unreadable, or (STRICT=1) when a criterion fails."""
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"MISSING {os.path.basename(path)}: {e}")
        err = path[:-5] + ".err"
        if os.path.exists(err):
            print("".join(open(err).readlines()[-5:]), end="")
        return None


def objective(t, metric):
    m = t.get("metrics") or {}
    return m.get(metric, 0.0) if t.get("phase") == "Succeeded" else 0.0


def describe(t, metric):
    f = t.get("failure") or {}
    what = f"{metric} {objective(t, metric):.1f}" if t.get("phase") == "Succeeded" else \
        f"{t.get('phase')} {f.get('category', '')}"
    return f"  {t['name']:<24} {json.dumps(t['config']):<34} {what}"


def main():
    work, mode = sys.argv[1], sys.argv[2]
    tune, sweep, diag = (load(os.path.join(work, n + ".json"))
                         for n in ("tune", "sweep", "diagnose"))
    print(f"\n==== paratune on one machine: mode {mode} ====")
    ok = tune is not None and sweep is not None and diag is not None
    criteria = []
    if tune and sweep:
        metric = tune["objective"]["metric"]
        trials = tune["trials"]
        print(f"tuner: {len(trials)} trials, stop {tune.get('stopReason')}: "
              f"{tune.get('stopMessage', '')}")
        for t in trials:
            print(describe(t, metric))
        print(f"sweep (grid over {sweep['searchSpace']['valid']} valid configurations): "
              f"{len(sweep['trials'])} trials")
        for t in sweep["trials"]:
            print(describe(t, metric))
        ooms = sum(1 for t in trials if (t.get("failure") or {}).get("category") == "CudaOOM")
        best = max((objective(t, metric) for t in trials), default=0.0)
        optimum = max((objective(t, metric) for t in sweep["trials"]), default=0.0)
        reached = next((i + 1 for i, t in enumerate(trials)
                        if optimum > 0 and objective(t, metric) >= 0.97 * optimum), None)
        ratio = best / optimum if optimum > 0 else 0.0
        print(f"tuner best {best:.1f} vs exhaustive best {optimum:.1f}: {100 * ratio:.1f}%; "
              f"within 3% after {reached if reached else 'never'} trial(s); OOM trials {ooms}")
        criteria += [("best within 3% of the sweep's within 4 trials",
                      reached is not None and reached <= 4),
                     ("at most 1 OOM trial launched", ooms <= 1)]
    if diag:
        for c in diag["checks"]:
            verdict = "inconclusive" if c.get("inconclusive") else \
                ("pass" if c.get("passed") else "FAIL")
            print(f"node check {c['check']:<14} {verdict:<12} {c.get('summary', '')}")
        criteria.append(("node checks pass, every output parsed",
                         diag.get("passed") and not diag.get("inconclusive")))
    for name, good in criteria:
        print(f"[{'PASS' if good else 'FAIL'}] {name}")
    if mode != "gpu":
        print("(not a GPU run: the criteria above are about trial-sim or CPU, not the issue's)")
    if not ok:
        print("INCOMPLETE: a step produced no result (see the .err files)")
        return 1
    if os.environ.get("STRICT") == "1" and not all(g for _, g in criteria):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
