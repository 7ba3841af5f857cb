#!/usr/bin/env python3
"""Optuna's TPE as an external peer of the built-in engine (issue 14, item 4).

Every scenario of bench/scenarios x seeds x realities (perturbed, structural): a TPE study
(optuna.samplers.TPESampler, seeded) asks for a configuration of the campaign's search space,
`paratune simulate -f SCENARIO --seed N --reality R --evaluate CONFIG` runs it on the same
simulated cluster the built-in engine is benchmarked on (the same noisy trial, OOMs and invalid
configurations included), and the measured objective is told back (a failed run is a FAIL
trial). Reported like loop_tuning_bench: the true objective of the best measured configuration
over the exhaustive optimum after 5, 10 and 20 trials, and failed trials.
Usage: bench/optuna_peer.py BUILD_DIR [seeds] [trials]. Prints Markdown; exit 1 when it could
not measure (no optuna: prints the section saying so and exits 0).
"""
import glob
import json
import os
import statistics
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def evaluate(paratune, scenario, seed, reality, config, attempt=0, exhaustive=False):
    cmd = [paratune, "simulate", "-f", scenario, "--seed", str(seed), "--reality", reality,
           "--evaluate", json.dumps(config), "--attempt", str(attempt), "-o", "json"]
    if exhaustive:
        cmd.append("--exhaustive")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def search_space(scenario):
    with open(scenario) as f:
        doc = next(d for d in yaml.safe_load_all(f) if d and d.get("kind") == "TuningCampaign")
    spec = doc["spec"]
    params = [(p["name"], p["values"]) for p in spec["searchSpace"]["parameters"]]
    metric = spec.get("objective", {}).get("metric", "mfu")
    return params, metric != "stepTimeSeconds"


def run_study(optuna, paratune, scenario, seed, reality, trials):
    params, maximize = search_space(scenario)
    first = {name: values[0] for name, values in params}
    optimum = evaluate(paratune, scenario, seed, reality, first, exhaustive=True)["optimum"]
    sampler = optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(direction="maximize" if maximize else "minimize", sampler=sampler)
    best_measured, best_true, ratios, failed, failed10 = None, 0.0, [], 0, 0
    for i in range(trials):
        trial = study.ask()
        config = {}
        for name, values in params:
            # Categorical over the listed values (strings for Optuna, typed back for paratune).
            pick = trial.suggest_categorical(name, [json.dumps(v) for v in values])
            config[name] = json.loads(pick)
        r = evaluate(paratune, scenario, seed, reality, config)
        if not r["succeeded"] or r["objective"] <= 0:
            failed += 1
            failed10 += i < 10
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            v = r["objective"]
            study.tell(trial, v)
            if best_measured is None or (v > best_measured if maximize else v < best_measured):
                best_measured, best_true = v, r["trueObjective"]
        ratio = 0.0
        if best_true > 0 and optimum > 0:
            ratio = best_true / optimum if maximize else optimum / best_true
        ratios.append(ratio)
    return ratios, failed, failed10


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    trials = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    print("## Optuna TPE (external peer)\n")
    try:
        import optuna
    except ImportError:
        print("Not run: python3-optuna is missing (hack/install-deps.sh installs it).")
        return 0
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    paratune = os.path.join(build, "bin", "paratune")
    scenarios = sorted(glob.glob(os.path.join(ROOT, "bench", "scenarios", "*.yaml")))
    print(f"Optuna {optuna.__version__} TPESampler(seed) over {len(scenarios)} scenarios x "
          f"{seeds} seeds per reality, {trials} trials each, every trial run by `paratune "
          "simulate --evaluate` on the same simulated cluster as loop_tuning_bench (failed runs "
          "told as FAIL; a repeated configuration costs a trial, as it would on a cluster). "
          "best/opt: true objective of the best measured configuration over the exhaustive "
          "optimum.\n")
    print("| reality | best/opt @5 (mean) | @5 (median) | @10 (mean) | @20 (mean) | "
          "failed in 10 | failed (all) |")
    print("|---|---|---|---|---|---|---|")
    for reality in ("perturbed", "structural"):
        at5, at10, at20, f10, fall = [], [], [], [], []
        for scenario in scenarios:
            for seed in range(1, seeds + 1):
                try:
                    ratios, failed, failed10 = run_study(optuna, paratune, scenario, seed, reality, trials)
                except subprocess.CalledProcessError as e:
                    print(f"{scenario} seed {seed}: {e.stderr.strip()}", file=sys.stderr)
                    return 1
                at = lambda k: ratios[min(k, len(ratios)) - 1]
                at5.append(at(5))
                at10.append(at(10))
                at20.append(at(20))
                fall.append(failed)
                f10.append(failed10)
        n = max(1, len(at5))
        print(f"| {reality} | {sum(at5) / n:.3f} | {statistics.median(at5):.3f} | "
              f"{sum(at10) / n:.3f} | {sum(at20) / n:.3f} | {sum(f10) / n:.2f} | {sum(fall) / n:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
