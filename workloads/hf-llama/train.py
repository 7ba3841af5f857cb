#!/usr/bin/env python3
"""A real training run for paratune to tune: a randomly initialised Llama-architecture causal LM
(the shape of the campaign's spec.model) trained on synthetic tokens, no download.

Configuration (contract section 4): PARATUNE_MBS (micro-batch size), PARATUNE_RECOMPUTE
(none | full: full = gradient checkpointing of every decoder layer), PARATUNE_WORKLOAD (the
campaign's model, training and hardware as JSON: layers, hidden size, heads, vocabulary, sequence
length, global batch size). The global batch is reached by gradient accumulation
(global / mbs micro-batches per optimizer step, one device).

With Hugging Face transformers importable it trains LlamaForCausalLM with transformers.Trainer
(bf16 autocast over fp32 weights on CUDA, fused AdamW, SDPA attention, as
../../../shared/measurements/h100-hf/sweep.py measured), so the log holds the Trainer's own lines:
its log dicts ({'loss': ..., 'grad_norm': ..., 'learning_rate': ..., 'epoch': ...}) and the final
{'train_runtime': ..., 'train_samples_per_second': ..., ...} (transformers' PrinterCallback with
disable_tqdm=True). Without transformers, the same model in plain PyTorch (RMSNorm, RoPE,
grouped-query SDPA attention, SwiGLU; torch.utils.checkpoint per layer for full recompute) prints
lines of the same format.

Either way a callback times every optimizer step (torch.cuda.synchronize on both ends) and prints
one JSON line per step in the contract's `json` collector format:
  {"step": 3, "stepTimeSeconds": 1.21, "tokensPerSecondPerDevice": 54172.0, "peakMemoryGiB": 36.9}
(the collector drops the warm-up steps), and the peak memory at the end. A CUDA OOM is not caught:
the real torch.OutOfMemoryError traceback reaches the log and the exit status is 1.

It writes no termination message (the metrics come from the log through the campaign's
collector, as for any framework). Flags: --steps N (optimizer steps, default 4), --tiny (a
2-layer, 64-wide model at sequence 128 for CPU smoke tests).
"""
import argparse
import json
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint
import torch.utils.data

try:  # the Trainer needs accelerate (TrainingArguments raises without it)
    import accelerate  # noqa: F401
    import transformers
    from transformers import (LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback,
                              TrainingArguments, default_data_collator)
    WHY_PLAIN = ""
except ImportError as e:  # plain PyTorch below
    transformers, WHY_PLAIN = None, str(e)

GIB = 2**30


def read_config(args):
    w = json.loads(os.environ.get("PARATUNE_WORKLOAD", "{}") or "{}")
    m, t = w.get("model", {}), w.get("training", {})
    if "numLayers" not in m and not args.tiny:
        sys.exit("PARATUNE_WORKLOAD: the campaign's spec.model must give the shape (numLayers, "
                 "hiddenSize, ffnHiddenSize, numAttentionHeads, numQueryGroups, vocabSize); "
                 "train.py does not resolve presets")
    c = dict(
        layers=int(m.get("numLayers", 2)), hidden=int(m.get("hiddenSize", 64)),
        ffn=int(m.get("ffnHiddenSize", 4 * int(m.get("hiddenSize", 64)))),
        heads=int(m.get("numAttentionHeads", 4)),
        kv=int(m.get("numQueryGroups", m.get("numAttentionHeads", 4))),
        vocab=int(m.get("vocabSize", 512)), tied=bool(m.get("tiedEmbeddings", False)),
        seq=int(t.get("seqLength", 128)), gbs=int(t.get("globalBatchSize", 8)),
        mbs=int(os.environ.get("PARATUNE_MBS", "1")),
        recompute=os.environ.get("PARATUNE_RECOMPUTE", "none"))
    if args.tiny:
        c.update(layers=2, hidden=64, ffn=128, heads=4, kv=2, vocab=512, seq=min(c["seq"], 128))
    if c["recompute"] not in ("none", "full"):
        sys.exit(f"PARATUNE_RECOMPUTE={c['recompute']}: the Trainer checkpoints whole layers "
                 "(none | full)")
    if c["gbs"] % c["mbs"]:
        sys.exit(f"PARATUNE_MBS={c['mbs']} does not divide the global batch {c['gbs']}")
    return c


def peak_gib(device):
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated() / GIB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB  # Linux: KiB


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


class StepClock:
    """Times optimizer steps and prints the contract's JSON metrics line for each."""

    def __init__(self, c, device):
        self.c, self.device, self.t0, self.step = c, device, 0.0, 0

    def begin(self):
        sync(self.device)
        self.t0 = time.perf_counter()

    def end(self):
        sync(self.device)
        dt = time.perf_counter() - self.t0
        self.step += 1
        print(json.dumps({"step": self.step, "stepTimeSeconds": round(dt, 5),
                          "tokensPerSecondPerDevice": round(self.c["gbs"] * self.c["seq"] / dt, 1),
                          "peakMemoryGiB": round(peak_gib(self.device), 3)}), flush=True)


class Tokens(torch.utils.data.Dataset):
    def __init__(self, c, n):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, c["vocab"], (n, c["seq"]), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


# ---- Hugging Face Trainer ----------------------------------------------------------------

def train_hf(c, args, device):
    cfg = LlamaConfig(hidden_size=c["hidden"], intermediate_size=c["ffn"],
                      num_hidden_layers=c["layers"], num_attention_heads=c["heads"],
                      num_key_value_heads=c["kv"], vocab_size=c["vocab"],
                      tie_word_embeddings=c["tied"], max_position_embeddings=max(c["seq"], 4096),
                      attn_implementation="sdpa", use_cache=False)
    with torch.device(device):
        model = LlamaForCausalLM(cfg)
    print(f"model: LlamaForCausalLM {sum(p.numel() for p in model.parameters())} parameters, "
          f"transformers {transformers.__version__}, torch {torch.__version__}", flush=True)
    cuda = device.type == "cuda"
    wanted = dict(output_dir=os.path.join(os.environ.get("TMPDIR", "/tmp"), "paratune-hf-trainer"),
                  per_device_train_batch_size=c["mbs"],
                  gradient_accumulation_steps=c["gbs"] // c["mbs"], max_steps=args.steps,
                  learning_rate=1e-5, lr_scheduler_type="constant", logging_steps=1,
                  report_to=[], save_strategy="no", disable_tqdm=True, bf16=cuda,
                  gradient_checkpointing=c["recompute"] == "full",
                  gradient_checkpointing_kwargs={"use_reentrant": False},
                  optim="adamw_torch_fused" if cuda else "adamw_torch",
                  dataloader_num_workers=0, use_cpu=not cuda, seed=0)
    known = set(TrainingArguments.__dataclass_fields__)  # older releases lack some fields
    targs = TrainingArguments(**{k: v for k, v in wanted.items() if k in known})
    clock = StepClock(c, device)

    # Each optimizer step is timed from the end of the one before (the first from the start of
    # training), so the interval holds the data loading and every micro-batch whatever the
    # release calls on_step_begin for.
    class Timer(TrainerCallback):
        def on_train_begin(self, *a, **k):
            clock.begin()

        def on_step_end(self, *a, **k):
            clock.end()
            clock.begin()

    trainer = Trainer(model=model, args=targs, train_dataset=Tokens(c, c["gbs"] * args.steps),
                      data_collator=default_data_collator, callbacks=[Timer()])
    trainer.train()


# ---- plain PyTorch (no transformers) -----------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.w = nn.Parameter(torch.ones(h))

    def forward(self, x):
        return self.w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def rope(x, pos):
    d = x.shape[-1] // 2
    f = 1.0 / (500000.0 ** (torch.arange(d, device=x.device, dtype=torch.float32) / d))
    a = pos[:, None].float() * f[None, :]
    cos, sin = a.cos().to(x.dtype), a.sin().to(x.dtype)
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def causal_attention(q, k, v):
    """SDPA (torch >= 2.0); before it (Debian 12's python3-torch 1.13), the same causal attention
    written out: softmax(q k^T / sqrt(d) + mask) v."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    s = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(scores.masked_fill(mask, float("-inf")), -1) @ v


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, self.nh, self.nkv = c["hidden"], c["heads"], c["kv"]
        self.hd = h // self.nh
        self.n1, self.n2 = RMSNorm(h), RMSNorm(h)
        self.q = nn.Linear(h, self.nh * self.hd, bias=False)
        self.kv = nn.Linear(h, 2 * self.nkv * self.hd, bias=False)
        self.o = nn.Linear(self.nh * self.hd, h, bias=False)
        self.gate_up = nn.Linear(h, 2 * c["ffn"], bias=False)
        self.down = nn.Linear(c["ffn"], h, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        pos = torch.arange(s, device=x.device)
        y = self.n1(x)
        q = self.q(y).view(b, s, self.nh, self.hd).transpose(1, 2)
        k, v = self.kv(y).view(b, s, 2, self.nkv, self.hd).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        q, k = rope(q, pos), rope(k, pos)
        rep = self.nh // self.nkv
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        a = causal_attention(q, k, v)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        g, u = self.gate_up(self.n2(x)).chunk(2, -1)
        return x + self.down(F.silu(g) * u)


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.emb = nn.Embedding(c["vocab"], c["hidden"])
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"])
        self.head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        if c["tied"]:
            self.head.weight = self.emb.weight

    def forward(self, ids):
        x = self.emb(ids)
        for blk in self.blocks:
            if self.c["recompute"] == "full" and self.training:
                x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        logits = self.head(self.norm(x)).float()
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                               ids[:, 1:].reshape(-1))


def train_plain(c, args, device):
    model = Llama(c).to(device)  # (torch.device as a context manager needs torch 2.0)
    print(f"model: plain PyTorch Llama {sum(p.numel() for p in model.parameters())} parameters, "
          f"torch {torch.__version__} (no Trainer: {WHY_PLAIN})", flush=True)
    cuda = device.type == "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, **({"fused": True} if cuda else {}))
    data = Tokens(c, c["gbs"] * args.steps).x.to(device)
    micro, clock, start, losses = c["gbs"] // c["mbs"], StepClock(c, device), time.time(), []
    model.train()
    for step in range(args.steps):
        clock.begin()
        total = 0.0
        for i in range(micro):
            lo = step * c["gbs"] + i * c["mbs"]
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
                loss = model(data[lo:lo + c["mbs"]]) / micro
            loss.backward()
            total += loss.item()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        clock.end()
        losses.append(total)
        # transformers' Trainer log dict (Trainer._maybe_log_save_evaluate), printed as its
        # PrinterCallback prints it.
        print({"loss": round(total, 4), "grad_norm": float(norm), "learning_rate": 1e-5,
               "epoch": round((step + 1) / args.steps, 2)}, flush=True)
    runtime = time.time() - start
    print({"train_runtime": round(runtime, 4),
           "train_samples_per_second": round(c["gbs"] * args.steps / runtime, 3),
           "train_steps_per_second": round(args.steps / runtime, 3),
           "train_loss": sum(losses) / len(losses), "epoch": 1.0}, flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--tiny", action="store_true")
    args = p.parse_args()
    if args.steps < 2:
        sys.exit("--steps: at least 2 (the collector drops the first, warm-up, step)")
    c = read_config(args)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        print(f"device: {torch.cuda.get_device_name(0)} "
              f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')}", flush=True)
    print("config: " + json.dumps(c), flush=True)
    (train_hf if transformers is not None else train_plain)(c, args, device)
    peak = peak_gib(device)
    reserved = torch.cuda.max_memory_reserved() / GIB if device.type == "cuda" else 0.0
    print(f"peak memory: allocated {peak:.2f} GiB, reserved {reserved:.2f} GiB", flush=True)
    print(json.dumps({"peakMemoryGiB": round(peak, 3)}), flush=True)


if __name__ == "__main__":
    main()
