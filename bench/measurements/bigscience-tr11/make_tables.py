#!/usr/bin/env python3
"""Writes the replay tables of this folder from the rows of BigScience's tr11 (BLOOM) topology
search, quoted exactly as train/tr11-176B-ml/chronicles-prequel.md prints them
(https://github.com/bigscience-workshop/bigscience/blob/59a90eec97d93ef0b7093e2052e2b70196813ded/train/tr11-176B-ml/chronicles-prequel.md).
Run it from this folder; it rewrites the NAME.jsonl files (the NAME.yaml campaigns are by hand).

Conversions: Sec/it is the step time of one global batch; tokens per second per GPU =
GBS x 2048 / Sec/it / 384. Mem (nvidia-smi on the busiest node, "GB") is recorded as
deviceMemoryUsedGiB (memory in use: an upper bound of the allocated peak, not the peak); "GB"
with no figure means the row has none, and the metric is left out.
"""
import json

GPUS, SEQ = 384, 2048

# | Nodes | Size | DP | TP | PP | MBS | GBS | Mem | Sec/it | TFLOPs | Notes |, 2022-02-25,
# NHIDDEN=14336 / NLAYERS=72 / NHEADS=64 ("GBS Variations").
ROWS_0225 = """
|    48 | 181B |  8 |  8 |  6 |   4 | 2048 | 55GB | 114.11 | 141.27 | 02-25 |
|    48 | 181B |  8 |  8 |  6 |   6 | 2016 | 66GB | 123.57 | 128.43 | 02-25 |
|    48 | 181B |  4 |  8 | 12 |   4 | 2048 | 49GB | 117.07 | 137.70 | 02-25 |
|    48 | 181B |  4 |  8 | 12 |   2 | 2048 | GB   | 128.82 | 125.15 | 02-25 |
|    48 | 181B |  6 |  8 |  8 |   4 | 2016 | 52GB | 113.16 | 140.24 | 02-25 |
|    48 | 181B | 12 |  8 |  4 |   2 | 2016 | 53GB | 125.52 | 126.43 | 02-25 |
|    48 | 181B | 12 |  8 |  4 |   4 | 2016 | 59GB | 114.81 | 138.22 | 02-25 |
|    48 | 181B | 24 |  8 |  2 |   1 | 2016 | 65GB | 145.45 | 109.11 | 02-25 |
|    48 | 181B | 24 |  8 |  2 |   2 | 2016 | 76GB | 136.13 | 116.58 | 02-25 |
|    48 | 181B | 48 |  8 |  1 |   1 | 2016 | OOM  |        |        | 02-25 |
|    48 | 181B |  8 |  4 | 12 |   4 | 2048 | 60GB | 111.89 | 144.08 | 02-25 |
|    48 | 181B |  8 |  4 | 12 |   2 | 2048 | 44GB | 110.48 | 145.92 | 02-25 |
|    48 | 181B |  8 |  4 | 12 |   2 | 2048 | 38GB | 113.54 | 141.99 | 02-25 |
|    48 | 181B | 16 |  4 |  6 |   4 | 2048 | 75GB | 117.11 | 137.66 | 02-25 |
|    48 | 181B | 16 |  4 |  6 |   2 | 2048 | 57GB | 111.71 | 144.31 | 02-25 |
|    48 | 181B | 16 |  2 | 12 |   2 | 2048 | 63GB | 112.50 | 143.30 | 02-25 |
|    48 | 181B | 32 |  2 |  6 |   2 | 2048 | OOM  |        |        | 02-25 |
|    48 | 181B | 32 |  2 |  6 |   1 | 2048 | OOM  |        |        | 02-25 |
|    48 | 181B |  8 |  2 | 24 |   1 | 2048 | 44GB | 119.53 | 134.88 | 02-25 |
|    48 | 181B |  8 |  2 | 24 |   2 | 2048 | 53GB | 122.75 | 131.33 | 02-25 |
|    48 | 181B |  4 |  4 | 24 |   1 | 2048 | GB   | 130.60 | 123.44 | 02-25 |
"""

# | Nodes | Size | DP | TP | PP | MBS | NHEADS | GBS | Mem | Sec/it | TFLOPs | Notes |, 2022-02-28,
# HIDDEN=12288; NLAYERS=100 ("Rebalancing layers": BF16 optimizer, embeddings as pipeline slots).
ROWS_0228 = """
|    48 | 184B | 16 |  4 |  6 |   2 |     64 | 2048 | OOM  | x      | x      | 02-28 |
|    48 | 184B | 16 |  4 |  6 |   1 |     64 | 2048 | OOM  | x      | x      | 02-28 |
|    48 | 184B |  8 |  8 |  6 |   2 |     64 | 2048 | 61GB | 139.72 | 117.91 | 02-28 |
|    48 | 184B |  8 |  8 |  6 |   4 |     64 | 2048 | 72GB | 120.96 | 136.20 | 02-28 |
"""


def parse(text, with_heads=False):
  for line in text.strip().splitlines():
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    dp, tp, pp, mbs = (int(c) for c in cells[2:6])
    rest = cells[6:]
    if with_heads:
      rest = rest[1:]
    gbs, mem, sec = int(rest[0]), rest[1], rest[2]
    yield dict(dp=dp, tp=tp, pp=pp, mbs=mbs, gbs=gbs, mem=mem, sec=sec)


def write(name, rows, gbs, fixed):
  seen = set()
  with open(name + '.jsonl', 'w') as f:
    for r in rows:
      if r['gbs'] != gbs:
        continue
      assert r['dp'] * r['tp'] * r['pp'] == GPUS
      cfg = dict(tp=r['tp'], pp=r['pp'], mbs=r['mbs'], **fixed)
      key = json.dumps(cfg, sort_keys=True)
      if key in seen:  # a repeated configuration: the first row is kept
        continue
      seen.add(key)
      if r['mem'] == 'OOM':
        line = {'config': cfg, 'outcome': 'oom', 'failure': {'category': 'CudaOOM'}}
      else:
        sec = float(r['sec'])
        m = {'stepTimeSeconds': sec,
             'tokensPerSecondPerDevice': round(gbs * SEQ / sec / GPUS, 2)}
        if r['mem'] != 'GB':
          m['deviceMemoryUsedGiB'] = float(r['mem'].removesuffix('GB'))
        line = {'config': cfg, 'outcome': 'succeeded', 'metrics': m}
      f.write(json.dumps(line) + '\n')


FIXED_0225 = dict(recompute='full', distributedOptimizer=True, sequenceParallel=False)
write('tr11-181b-gbs2048', parse(ROWS_0225), 2048, FIXED_0225)
write('tr11-181b-gbs2016', parse(ROWS_0225), 2016, FIXED_0225)
write('tr11-184b-gbs2048', parse(ROWS_0228, with_heads=True), 2048,
      dict(FIXED_0225, firstPipelineStageLayers=16, lastPipelineStageLayers=16))
