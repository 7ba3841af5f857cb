#!/usr/bin/env python3
"""Writes the replay tables of this folder from BigScience's 1B3 benchmark on Jean Zay V100s,
quoted exactly as experiments/tr3m-1B3.md prints them
(https://github.com/bigscience-workshop/bigscience/blob/1dee360c5958c283c12470950658cd4b6482ad09/experiments/tr3m-1B3.md).
Run it from this folder; it rewrites the NAME.jsonl files (the NAME.yaml campaigns are by hand).

Conversions: Speed is seconds per iteration (the document's own TFLOPs formula divides by it:
1.3e9 x 4 x 2 x 2048 x 512 / (29 x 8 x 1e12) = 47.0 for Speed 29); tokens per second per GPU =
512 x 2048 / Speed / 8. Notes "NGB" (memory in use, nvidia-smi) is recorded as
deviceMemoryUsedGiB (an upper bound of the allocated peak, not the peak); "OOM" rows are
outcome oom.
"""
import json

GPUS, SEQ, GBS = 8, 2048, 512

# | NNODES | TP | PP | DP | MBS | Speed | TFlops | Notes |  (section "32GB node")
ROWS_32GB_RECOMPUTE = """
|      2 |   1 |   1 |   8 |   1 |    29 |   47.0 | 16GB                  |
|      2 |   1 |   1 |   8 |   2 |    29 |   47.0 | 17GB                  |
|      2 |   1 |   1 |   8 |   4 |    28 |   48.7 | 20GB                  |
|      2 |   1 |   1 |   8 |   8 |    28 |   48.7 | 25GB                  |
|      2 |   1 |   2 |   4 |   1 |    30 |   45.4 | 10GB                  |
|      2 |   1 |   2 |   4 |   2 |    29 |   47.0 | 11GB                  |
|      2 |   1 |   2 |   4 |   8 |    29 |   47.0 | 15GB                  |
|      2 |   1 |   2 |   4 |  16 |     x |      x | OOM                   |
|      2 |   1 |   4 |   2 |   1 |    32 |   42.6 | 9GB                   |
|      2 |   1 |   4 |   2 |   8 |    32 |   42.6 | 13GB                  |
|      2 |   2 |   1 |   4 |   1 |    53 |   25.7 | 11GB                  |
"""
# Same section, "After removing `--checkpoint-activations`".
ROWS_32GB_NO_RECOMPUTE = """
|      2 |   1 |   1 |   8 |   1 |    23 |   44.4 | 27GB                  |
|      2 |   1 |   2 |   4 |   1 |    23 |   44.4 | 21GB                  |
|      2 |   1 |   4 |   2 |   1 |    25 |   40.8 | 19GB                  |
|      2 |   1 |   4 |   2 |   2 |    24 |   42.5 | 30GB                  |
|      2 |   2 |   1 |   4 |   1 |    39 |   26.2 | 21GB                  |
"""
# Section "16GB node" (with --checkpoint-activations).
ROWS_16GB = """
|      2 |   1 |   1 |   8 |   1 |    29 |   47.0 | 16GB borderline OOM   |
|      2 |   1 |   2 |   4 |   1 |    30 |   45.4 | 11GB                  |
|      2 |   1 |   2 |   4 |   2 |    29 |   47.0 | 12GB                  |
|      2 |   1 |   2 |   4 |   4 |    28 |   48.7 | 13GB                  |
|      2 |   1 |   2 |   4 |   8 |     x |      x | OOM                   |
|      2 |   1 |   4 |   2 |   1 |    32 |   42.6 | 9GB                   |
|      2 |   1 |   4 |   2 |   4 |    30 |   45.4 | 11GB                  |
|      2 |   1 |   4 |   2 |   8 |     x |        | OOM                   |
|      2 |   1 |   8 |   1 |   1 |    37 |   36.8 | 9GB                   |
|      2 |   1 |   8 |   1 |   4 |    35 |   38.9 | 11GB                  |
|      2 |   1 |   8 |   1 |   8 |     x |        | OOM                   |
"""


def lines(text, recompute):
  for line in text.strip().splitlines():
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    tp, pp, dp, mbs = (int(c) for c in cells[1:5])
    assert tp * pp * dp == GPUS
    cfg = {'tp': tp, 'pp': pp, 'mbs': mbs, 'recompute': recompute,
           'distributedOptimizer': True, 'sequenceParallel': False}
    note = cells[7]
    if note == 'OOM':
      yield {'config': cfg, 'outcome': 'oom', 'failure': {'category': 'CudaOOM'}}
      continue
    speed = float(cells[5])
    m = {'stepTimeSeconds': speed, 'tokensPerSecondPerDevice': round(GBS * SEQ / speed / GPUS, 2)}
    # "16GB borderline OOM" on a 16 GB card: the reading is the card's size, not a peak.
    if note.endswith('GB'):
      m['deviceMemoryUsedGiB'] = float(note.removesuffix('GB'))
    yield {'config': cfg, 'outcome': 'succeeded', 'metrics': m}


def write(name, rows):
  with open(name + '.jsonl', 'w') as f:
    for r in rows:
      f.write(json.dumps(r) + '\n')


write('tr3m-1b3-v100-32gb', list(lines(ROWS_32GB_RECOMPUTE, 'full')) +
      list(lines(ROWS_32GB_NO_RECOMPUTE, 'none')))
write('tr3m-1b3-v100-16gb', lines(ROWS_16GB, 'full'))
