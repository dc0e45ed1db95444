"""Print what a CPU tier for the KV cache buys a shared-prefix load (the figures in
docs/serving-calibration.md, "A CPU tier for the KV cache"):

    python tools/kv_offload_figures.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from schedatrix.serving.cluster.deployment import Design  # noqa: E402
from schedatrix.serving.studies.cpu_tier_effect import tier_effect  # noqa: E402


def main() -> int:
    print("2,000 questions at 4/s, Llama-3.1-8B, one GPU, 200 GB CPU tier, seed 0")
    print("hits: prompt tokens looked up found in HBM without the tier, then in HBM and in the "
          "CPU tier with it")
    print(f"{'GPU':10s} {'docs':>5s} {'doc tok':>9s} {'HBM tok':>8s} {'hit off':>8s} "
          f"{'HBM on':>7s} {'CPU on':>7s} {'TTFT off':>8s} {'TTFT on':>8s} {'copies':>7s} "
          f"{'saved':>6s}")
    for gpu in ("a100-80gb", "h100-80gb"):
        for docs in (400, 50):
            e = tier_effect(Design(gpu=gpu), 200, documents=docs)
            print(f"{gpu:10s} {docs:5d} {e.document_tokens:9,d} {e.hbm_tokens:8,d} "
                  f"{e.off.hbm_hit_share:8.1%} {e.on.hbm_hit_share:7.1%} "
                  f"{e.on.cpu_hit_share:7.1%} {e.ttft_off_s * 1000:6.0f}ms "
                  f"{e.ttft_on_s * 1000:6.0f}ms {e.on.load_s:6.1f}s "
                  f"{e.on.recompute_saved_s:5.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
