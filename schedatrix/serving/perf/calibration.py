"""Fit the performance model's efficiency factors to the profiled GPUs.

``fit_coefficients`` turns :func:`~schedatrix.serving.perf.profiles.read_profiles`'s samples into
one dict of :class:`~schedatrix.serving.perf.kernels.Efficiency` fields per catalog GPU:

- A100 and H100 from Vidur: matmuls (FLOP and HBM shares, roofline blend, kernel launch) by
  least squares on log time, each sample weighted by the log-width of the token range it stands
  for (so the many large token counts do not drown the small decode batches); elementwise share
  on each layer's sum of norms, rotary, activation and add; the embedding's share; all-reduce
  and in-node send latency and link share from the DGX collectives.
- H200 from its own matmul and attention measurements. They were timed eagerly, one operator
  between two CUDA events, so each carries the host's dispatch time; its fitted constant is kept
  as ``profile_floor_s`` (to compare with that profile) and the model's kernel launch, like the
  elementwise share and the collectives, comes from the H100 (the same Hopper chip and NVLink 4).
- Attention, which Vidur does not ship: A100 and H100 take the H200's fitted prefill and decode
  attention shares.
- Across nodes: the H100 DGX's cross-node send (36 GB/s at 64 MB, beyond HDR, so NDR at
  50 GB/s) gives ``inter_node_latency_s`` and ``inter_node_share`` for every GPU.
- Collective floors: the median profiled time of all-reduces of at most
  ``SMALL_MESSAGE_BYTES`` per group size (2, 4, 8 GPUs of a DGX node), and of sends of at most
  that size, per GPU: the latency end of each table, below which no collective goes.
- L4: no data; it takes the A100's factors (the nearest profiled generation) and says so.
- The host's time per scheduler iteration is not here: no profile measures it
  (:mod:`schedatrix.serving.perf.host`).

:mod:`schedatrix.serving.perf.profile_errors` compares the fitted model with every profiled sample.
"""

from __future__ import annotations

import numpy as np

from .catalog import GPUS, INTER_NODE_GB_S
from .kernels import (
    Efficiency,
    allreduce_s,
    decode_attention_s,
    elementwise_s,
    embedding_s,
    matmul_s,
    prefill_attention_s,
    send_s,
)
from .profiles import Profiles, layer_elementwise, select

__all__ = ["fit_coefficients", "SMALL_MESSAGE_BYTES"]

#: Collectives of at most this many bytes give the floors (the flat, latency-bound end of the
#: profiled tables: a decode batch's activations are 8 KiB to 1 MiB).
SMALL_MESSAGE_BYTES = 64 * 1024

def _weights(groups: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """Weight of each sample: half the log-distance between its neighbours' ``x`` in its group."""
    w = np.empty(len(x))
    keys = np.array(["|".join(map(str, k)) for k in zip(*groups, strict=True)])
    for key in np.unique(keys):
        idx = np.flatnonzero(keys == key)
        u = np.unique(np.log(x[idx].astype(float)))
        if len(u) == 1:
            w[idx] = 1.0
            continue
        edges = np.concatenate([[u[0] - (u[1] - u[0]) / 2], (u[1:] + u[:-1]) / 2,
                                [u[-1] + (u[-1] - u[-2]) / 2]])
        width = dict(zip(u, np.diff(edges), strict=True))
        w[idx] = [width[v] for v in np.log(x[idx].astype(float))]
    return w / w.mean()


def _fit(residual, x0, lower, upper) -> np.ndarray:
    from scipy.optimize import least_squares  # here: importing scipy costs a second a process

    return least_squares(residual, x0, bounds=(lower, upper), x_scale="jac").x


def _log_residual(predicted, measured, w):
    return np.sqrt(w) * (np.log(predicted) - np.log(measured))


def _efficiency(**values) -> Efficiency:
    base = dict(matmul_flops_share=0.7, matmul_hbm_share=0.8, roofline_blend=2.0,
                elementwise_hbm_share=0.5, embedding_hbm_share=0.5, kernel_launch_s=5e-6,
                prefill_attention_flops_share=0.5, decode_attention_hbm_share=0.9,
                allreduce_latency_s=3e-5, allreduce_link_share=0.6, send_latency_s=1e-5,
                send_link_share=0.8, inter_node_latency_s=2e-5, inter_node_share=0.7,
                allreduce_floor_s=(), send_floor_s=0.0, profile_floor_s=5e-6, source="")
    base.update(values)
    return Efficiency(**base)


def _fit_matmul(s: dict, gpu) -> dict:
    w = _weights([s["model"], s["tp"], s["op"]], s["tokens"])

    def residual(x):
        e = _efficiency(matmul_flops_share=x[0], matmul_hbm_share=x[1], roofline_blend=x[2])
        return _log_residual(matmul_s(e, gpu, s["tokens"], s["k"], s["n"], x[3]),
                             s["measured_s"], w)

    x = _fit(residual, [0.7, 0.8, 2.0, 1e-5], [0.05, 0.05, 1.0, 0.0], [1.0, 1.0, 20.0, 2e-4])
    return dict(matmul_flops_share=x[0], matmul_hbm_share=x[1], roofline_blend=x[2],
                profile_floor_s=x[3])


def _fit_elementwise(s: dict, gpu, launch_s: float) -> float:
    layer = layer_elementwise(s)
    w = _weights([layer["model"], layer["tp"]], layer["tokens"])

    def residual(x):
        e = _efficiency(elementwise_hbm_share=x[0], kernel_launch_s=launch_s)
        return _log_residual(elementwise_s(e, gpu, layer["nbytes"]).sum(axis=0),
                             layer["measured_s"], w)

    return float(_fit(residual, [0.5], [0.05], [1.0])[0])


def _fit_embedding(s: dict, gpu, launch_s: float) -> float:
    emb = select(s, op="emb")
    w = _weights([emb["model"], emb["tp"]], emb["tokens"])

    def residual(x):
        e = _efficiency(embedding_hbm_share=x[0], kernel_launch_s=launch_s)
        return _log_residual(embedding_s(e, gpu, emb["nbytes"]), emb["measured_s"], w)

    return float(_fit(residual, [0.5], [0.01], [1.0])[0])


def _fit_link(s: dict, gpu, kind: str) -> tuple[float, float]:
    w = _weights([s["p"]], s["nbytes"])

    def residual(x):
        if kind == "all_reduce":
            e = _efficiency(allreduce_latency_s=x[0], allreduce_link_share=x[1])
            predicted = allreduce_s(e, gpu, s["nbytes"], s["p"])
        else:
            e = _efficiency(send_latency_s=x[0], send_link_share=x[1])
            predicted = send_s(e, gpu, s["nbytes"])
        return _log_residual(predicted, s["measured_s"], w)

    x = _fit(residual, [2e-5, 0.6], [0.0, 0.01], [5e-4, 1.0])
    return float(x[0]), float(x[1])


def _floors(all_reduce: dict, send: dict) -> tuple[tuple, float]:
    """The collectives' floors: per group size, the median time of the small messages."""
    small = all_reduce["nbytes"] <= SMALL_MESSAGE_BYTES
    floors = tuple((int(p), float(np.median(all_reduce["measured_s"][small & (all_reduce["p"]
                                                                            == p)])))
                   for p in np.unique(all_reduce["p"][small]))
    send_floor = float(np.median(send["measured_s"][send["nbytes"] <= SMALL_MESSAGE_BYTES]))
    return floors, send_floor


def _fit_vidur_gpu(profiles: Profiles, name: str) -> dict:
    gpu = GPUS[name]
    values = _fit_matmul(select(profiles.matmul, gpu=name), gpu)
    values["kernel_launch_s"] = values["profile_floor_s"]
    ew = select(profiles.elementwise, gpu=name)
    values["elementwise_hbm_share"] = _fit_elementwise(ew, gpu, values["kernel_launch_s"])
    values["embedding_hbm_share"] = _fit_embedding(ew, gpu, values["kernel_launch_s"])
    net = select(profiles.network, gpu=name)
    ar = select(net, kind="all_reduce")
    values["allreduce_latency_s"], values["allreduce_link_share"] = _fit_link(
        select(ar, same_node=True), gpu, "all_reduce")
    sr = select(net, kind="send_recv", same_node=True)
    values["send_latency_s"], values["send_link_share"] = _fit_link(sr, gpu, "send_recv")
    values["allreduce_floor_s"], values["send_floor_s"] = _floors(select(ar, same_node=True), sr)
    return values


def _fit_inter_node(profiles: Profiles) -> tuple[float, float]:
    """InfiniBand latency and share from the H100 DGX's send between nodes, read as NDR."""
    s = select(profiles.network, gpu="h100-80gb", kind="send_recv", same_node=False)
    gpu, w = GPUS["h100-80gb"], _weights([s["p"]], s["nbytes"])

    def residual(x):
        e = _efficiency(inter_node_latency_s=x[0], inter_node_share=x[1])
        return _log_residual(send_s(e, gpu, s["nbytes"], INTER_NODE_GB_S["ib-ndr"]),
                             s["measured_s"], w)

    x = _fit(residual, [2e-5, 0.7], [0.0, 0.01], [5e-4, 1.0])
    return float(x[0]), float(x[1])


def _fit_attention(s: dict, gpu, values: dict) -> tuple[float, float]:
    floor = values["profile_floor_s"]
    dec, pre = select(s, phase="decode"), select(s, phase="prefill")

    def decode_residual(x):
        e = _efficiency(decode_attention_hbm_share=x[0])
        return _log_residual(floor + decode_attention_s(e, gpu, dec["kv_bytes"]),
                             dec["measured_s"], np.ones(len(dec["kv_bytes"])))

    decode_share = float(_fit(decode_residual, [0.9], [0.05], [1.0])[0])

    def prefill_residual(x):
        e = _efficiency(prefill_attention_flops_share=x[0], decode_attention_hbm_share=decode_share,
                        roofline_blend=values["roofline_blend"])
        return _log_residual(floor + prefill_attention_s(e, gpu, pre["flops"], pre["kv_bytes"]),
                             pre["measured_s"], np.ones(len(pre["flops"])))

    return float(_fit(prefill_residual, [0.5], [0.01], [1.0])[0]), decode_share


def fit_coefficients(profiles: Profiles) -> dict[str, dict]:
    """Fitted Efficiency fields per catalog GPU (see the module docstring for each source)."""
    a100 = _fit_vidur_gpu(profiles, "a100-80gb")
    h100 = _fit_vidur_gpu(profiles, "h100-80gb")
    h200 = _fit_matmul(select(profiles.matmul, gpu="h200"), GPUS["h200"])
    for key in ("kernel_launch_s", "elementwise_hbm_share", "embedding_hbm_share",
                "allreduce_latency_s", "allreduce_link_share", "send_latency_s",
                "send_link_share", "allreduce_floor_s", "send_floor_s"):
        h200[key] = h100[key]
    prefill, decode = _fit_attention(profiles.attention, GPUS["h200"], h200)
    inter_latency, inter_share = _fit_inter_node(profiles)
    for values in (a100, h100, h200):
        values.update(prefill_attention_flops_share=prefill, decode_attention_hbm_share=decode,
                      inter_node_latency_s=inter_latency, inter_node_share=inter_share)
    a100["source"] = ("Vidur A100 DGX profiles (matmuls, elementwise, collectives); attention "
                      "shares from the H200 measurement; inter-node share from the H100 DGX")
    h100["source"] = ("Vidur H100 DGX profiles (matmuls, elementwise, collectives); attention "
                      "shares from the H200 measurement; inter-node share from the H100 DGX")
    h200["source"] = ("H200 measurement (matmuls, attention; eager timings, host dispatch in "
                      "profile_floor_s); kernel launch, elementwise and collectives from the "
                      "H100 (Vidur)")
    l4 = dict(a100, source="uncalibrated: no L4 data; every factor is the A100's")
    out = {"a100-80gb": a100, "h100-80gb": h100, "h200": h200, "l4": l4}
    return {name: {k: (v if isinstance(v, str | tuple) else float(v)) for k, v in d.items()}
            for name, d in out.items()}
