"""FP8 GEMMs as a published kernel benchmark measured them (DeepGEMM's table), to hold the
matmul roofline's FP8 and grouped (MoE) matmuls to.

The matmul roofline (:func:`.kernels.matmul_s`) is fitted to profiled BF16 matmuls and runs FP8
at the same share of the FP8 peak (about 76%). DeepGEMM's table on an H800 (the H100 SXM's 132
SMs, FP8 peak and HBM) gives 590 to 1,358 TFLOP/s for its compute-bound shapes (4,096 or more
rows a group), 30% to 69% of the 1,979 TFLOP/s peak, median 55% (:func:`fp8_flops_share`).
The model does not use that share: docs/serving-calibration.md (FP8) shows what it would move
(the H200's FP8 throughput rows into band, the H100's FP8 prefills out) and why it is not
shipped. ``validation.replay.gemm_checks`` holds the roofline to every row of the table.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEEPGEMM", "DEEPGEMM_H800", "H800_FP8_TFLOPS", "COMPUTE_BOUND_ROWS",
           "fp8_flops_share"]

DEEPGEMM = ("https://github.com/deepseek-ai/DeepGEMM (README.md, 'Performance', as first "
            "released in February 2025: 'all shapes potentially used in DeepSeek-V3/R1 "
            "inference ... on H800 with NVCC 12.8'; FP8 inputs with fine-grained scaling)")
#: The H800's dense FP8 tensor-core peak (the H100 SXM's), TFLOP/s.
H800_FP8_TFLOPS = 1979.0
#: DeepGEMM's FP8 GEMM table on one H800 (the H100 SXM's SMs, FP8 peak and 3.35 TB/s of HBM3;
#: only its NVLink is cut), every row: ``(groups, rows per group, n, k, TFLOP/s)``; ``groups``
#: 0 is a dense GEMM, otherwise a grouped GEMM of one ``k x n`` weight matrix per group (the
#: MoE experts' layout: its contiguous-layout rows, then its masked-layout rows).
DEEPGEMM_H800: tuple[tuple[int, int, int, int, float], ...] = (
    (0, 64, 2112, 7168, 206), (0, 64, 24576, 1536, 289), (0, 64, 32768, 512, 219),
    (0, 64, 7168, 16384, 336), (0, 64, 4096, 7168, 287), (0, 64, 7168, 2048, 295),
    (0, 128, 2112, 7168, 352), (0, 128, 24576, 1536, 535), (0, 128, 32768, 512, 358),
    (0, 128, 7168, 16384, 645), (0, 128, 4096, 7168, 533), (0, 128, 7168, 2048, 510),
    (0, 4096, 2112, 7168, 1058), (0, 4096, 24576, 1536, 990), (0, 4096, 32768, 512, 590),
    (0, 4096, 7168, 16384, 1358), (0, 4096, 4096, 7168, 1304), (0, 4096, 7168, 2048, 1025),
    (4, 8192, 4096, 7168, 1297), (4, 8192, 7168, 2048, 1099), (8, 4096, 4096, 7168, 1288),
    (8, 4096, 7168, 2048, 1093),
    (1, 1024, 4096, 7168, 1233), (1, 1024, 7168, 2048, 925), (2, 512, 4096, 7168, 1040),
    (2, 512, 7168, 2048, 916), (4, 256, 4096, 7168, 932), (4, 256, 7168, 2048, 815),
)
#: The rows a group of this many or more makes compute bound (its prefill shapes).
COMPUTE_BOUND_ROWS = 4096


def fp8_flops_share(rows=DEEPGEMM_H800) -> float:
    """The median over ``rows``' compute-bound shapes of TFLOP/s over the FP8 peak."""
    tf = [r[-1] for r in rows if r[1] >= COMPUTE_BOUND_ROWS]
    return float(np.median(tf)) / H800_FP8_TFLOPS

