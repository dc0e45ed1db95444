"""Print what serving many LoRA adapters on one base model costs (the figures in
docs/serving-calibration.md, "Multi-LoRA"): the batched kernels by rank and distinct adapters,
and a load whose adapters outnumber the slots:

    python tools/lora_figures.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from schedatrix.serving.cluster.deployment import Design  # noqa: E402
from schedatrix.serving.load.requests import Requests  # noqa: E402
from schedatrix.serving.replica.lora import LoraKernels  # noqa: E402
from schedatrix.serving.sim.simulate import simulate  # noqa: E402


def main() -> int:
    perf = Design(gpu="h100-80gb").perf()
    step_ms = perf.iteration_s((), 64, 64 * 1000) * 1000
    print("Llama-3.1-8B on one H100: the LoRA kernels' ms in a decode step of 64 sequences of")
    print(f"1,000 tokens (the step alone: {step_ms:.2f} ms), by rank and distinct adapters")
    print(f"  {'rank':>4s} {'MB an adapter':>13s} {'1':>6s} {'8':>6s} {'32':>6s}")
    for rank in (8, 16, 64):
        k = LoraKernels(perf, rank)
        cells = " ".join(f"{k.seconds(64, d) * 1000:6.2f}" for d in (1, 8, 32))
        print(f"  {rank:4d} {k.adapter_bytes / 1e6:13.1f} {cells}")
    rng = np.random.default_rng(0)
    n = 600
    arrival = np.cumsum(rng.exponential(1 / 8, n))
    req = Requests(arrival, rng.integers(200, 800, n), rng.integers(50, 300, n),
                   np.zeros(n, np.int16))
    print("600 requests at 8/s (200-800 in, 50-300 out), Llama-3.1-8B on one A100, seed 0")
    print(f"  {'design':36s} {'TTFT mean':>9s} {'TPOT p50':>8s} {'skips':>7s} "
          f"{'loads cpu/disk':>14s} {'kernel s':>8s}")
    for knobs in ({}, dict(lora_adapters=1), dict(lora_adapters=16, max_loras=16),
                  dict(lora_adapters=16, max_loras=4, max_cpu_loras=16),
                  dict(lora_adapters=16, max_loras=1, max_cpu_loras=16)):
        d = Design(**knobs)
        run = simulate(req, d)
        ttft = float(np.mean(run.first_token_s - run.arrival_s)) * 1000
        tpot = float(np.median((run.done_s - run.first_token_s)
                               / np.maximum(req.output_tokens - 1, 1))) * 1000
        loads = f"{run.lora_loads[1]}/{run.lora_loads[2]}"
        print(f"  {d.name:36s} {ttft:7.0f}ms {tpot:6.1f}ms {run.lora_skips:7d} {loads:>14s} "
              f"{run.lora_kernel_s:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
