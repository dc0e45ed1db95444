"""Fit the performance model's efficiency factors to profiled GPUs, and measure how well it fits.

``fit_coefficients`` turns :func:`~schedatrix.serving.profiles.read_profiles`'s samples into one
dict of :class:`~schedatrix.serving.kernels.Efficiency` fields per catalog GPU:

- A100 and H100 from Vidur: matmuls (FLOP and HBM shares, roofline blend, kernel launch) by
  least squares on log time, each sample weighted by the log-width of the token range it stands
  for (so the many large token counts do not drown the small decode batches); elementwise share
  on each layer's sum of norms, rotary, activation and add; all-reduce and in-node send latency
  and link share from the DGX collectives.
- H200 from its own matmul and attention measurements. They were timed eagerly, one operator
  between two CUDA events, so each carries the host's dispatch time; its fitted constant is kept
  as ``profile_floor_s`` (to compare with that profile) and the model's kernel launch, like the
  elementwise share and the collectives, comes from the H100 (the same Hopper chip and NVLink 4).
- Attention, which Vidur does not ship: A100 and H100 take the H200's fitted prefill and decode
  attention shares.
- Across nodes: the H100 DGX's cross-node send (36 GB/s at 64 MB, beyond HDR, so NDR at
  50 GB/s) gives ``inter_node_share`` for every GPU.
- L4: no data; it takes the A100's factors (the nearest profiled generation) and says so.
- ``cpu_step_s`` is 0 everywhere: no profile measures the host's scheduling time.

``error_rows`` and ``summary`` compare predictions with every profiled sample; ``whole_steps``
predicts the three whole-step figures of the data's README.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

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
from .profiles import Profiles
from .shard import ELEMENTWISE, MATMULS

__all__ = ["fit_coefficients", "error_rows", "layer_samples", "summary", "whole_steps",
           "README_STEPS", "LAYER_KINDS"]

#: The whole-step figures the data's README quotes (Llama-2-7B, A100, TP1): (label, prefill
#: chunks, decoding requests, summed decode context, profiled seconds).
README_STEPS = (
    ("decode, batch 1, 1,024 context", (), 1, 1024, 9.9e-3),
    ("decode, batch 64, 1,024 context", (), 64, 64 * 1024, 28.7e-3),
    ("prefill, 2,048 tokens", ((2048, 0),), 0, 0, 158e-3),
)
#: A sample standing for token counts above this is a prefill-sized batch in the tables.
DECODE_SIZED_TOKENS = 256


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
    return least_squares(residual, x0, bounds=(lower, upper), x_scale="jac").x


def _log_residual(predicted, measured, w):
    return np.sqrt(w) * (np.log(predicted) - np.log(measured))


def _efficiency(**values) -> Efficiency:
    base = dict(matmul_flops_share=0.7, matmul_hbm_share=0.8, roofline_blend=2.0,
                elementwise_hbm_share=0.5, embedding_hbm_share=0.5, kernel_launch_s=5e-6,
                prefill_attention_flops_share=0.5, decode_attention_hbm_share=0.9,
                allreduce_latency_s=3e-5, allreduce_link_share=0.6, send_latency_s=1e-5,
                send_link_share=0.8, inter_node_latency_s=2e-5, inter_node_share=0.7,
                cpu_step_s=0.0, profile_floor_s=5e-6,
                source="")
    base.update(values)
    return Efficiency(**base)


def _select(family: dict, **where) -> dict:
    mask = np.ones(len(next(iter(family.values()))), bool)
    for key, value in where.items():
        mask &= family[key] == value
    return {k: v[mask] for k, v in family.items()}


def _fit_matmul(s: dict, gpu) -> dict:
    w = _weights([s["model"], s["tp"], s["op"]], s["tokens"])

    def residual(x):
        e = _efficiency(matmul_flops_share=x[0], matmul_hbm_share=x[1], roofline_blend=x[2])
        return _log_residual(matmul_s(e, gpu, s["tokens"], s["k"], s["n"], x[3]),
                             s["measured_s"], w)

    x = _fit(residual, [0.7, 0.8, 2.0, 1e-5], [0.05, 0.05, 1.0, 0.0], [1.0, 1.0, 20.0, 2e-4])
    return dict(matmul_flops_share=x[0], matmul_hbm_share=x[1], roofline_blend=x[2],
                profile_floor_s=x[3])


def _layer_elementwise(s: dict) -> dict:
    """Sum each Vidur row's five elementwise kernels: the layer's elementwise family."""
    layer = _select(s, op=ELEMENTWISE[0])
    measured = np.zeros(len(layer["tokens"]))
    nbytes = []
    for op in ELEMENTWISE:
        one = _select(s, op=op)
        measured += one["measured_s"]
        nbytes.append(one["nbytes"])
    return dict(layer, measured_s=measured, nbytes=np.array(nbytes))


def _fit_elementwise(s: dict, gpu, launch_s: float) -> float:
    layer = _layer_elementwise(s)
    w = _weights([layer["model"], layer["tp"]], layer["tokens"])

    def residual(x):
        e = _efficiency(elementwise_hbm_share=x[0], kernel_launch_s=launch_s)
        return _log_residual(elementwise_s(e, gpu, layer["nbytes"]).sum(axis=0),
                             layer["measured_s"], w)

    return float(_fit(residual, [0.5], [0.05], [1.0])[0])


def _fit_embedding(s: dict, gpu, launch_s: float) -> float:
    emb = _select(s, op="emb")
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


def _fit_vidur_gpu(profiles: Profiles, name: str) -> dict:
    gpu = GPUS[name]
    values = _fit_matmul(_select(profiles.matmul, gpu=name), gpu)
    values["kernel_launch_s"] = values["profile_floor_s"]
    ew = _select(profiles.elementwise, gpu=name)
    values["elementwise_hbm_share"] = _fit_elementwise(ew, gpu, values["kernel_launch_s"])
    values["embedding_hbm_share"] = _fit_embedding(ew, gpu, values["kernel_launch_s"])
    net = _select(profiles.network, gpu=name)
    ar = _select(net, kind="all_reduce")
    values["allreduce_latency_s"], values["allreduce_link_share"] = _fit_link(
        _select(ar, same_node=True), gpu, "all_reduce")
    sr = _select(net, kind="send_recv", same_node=True)
    values["send_latency_s"], values["send_link_share"] = _fit_link(sr, gpu, "send_recv")
    return values


def _fit_inter_node(profiles: Profiles) -> tuple[float, float]:
    """InfiniBand latency and share from the H100 DGX's send between nodes, read as NDR."""
    s = _select(profiles.network, gpu="h100-80gb", kind="send_recv", same_node=False)
    gpu, w = GPUS["h100-80gb"], _weights([s["p"]], s["nbytes"])

    def residual(x):
        e = _efficiency(inter_node_latency_s=x[0], inter_node_share=x[1])
        return _log_residual(send_s(e, gpu, s["nbytes"], INTER_NODE_GB_S["ib-ndr"]),
                             s["measured_s"], w)

    x = _fit(residual, [2e-5, 0.7], [0.0, 0.01], [5e-4, 1.0])
    return float(x[0]), float(x[1])


def _fit_attention(s: dict, gpu, values: dict) -> tuple[float, float]:
    floor = values["profile_floor_s"]
    dec, pre = _select(s, phase="decode"), _select(s, phase="prefill")

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
    h200 = _fit_matmul(_select(profiles.matmul, gpu="h200"), GPUS["h200"])
    for key in ("kernel_launch_s", "elementwise_hbm_share", "embedding_hbm_share",
                "allreduce_latency_s",
                "allreduce_link_share", "send_latency_s", "send_link_share"):
        h200[key] = h100[key]
    prefill, decode = _fit_attention(profiles.attention, GPUS["h200"], h200)
    inter_latency, inter_share = _fit_inter_node(profiles)
    for values in (a100, h100, h200):
        values.update(prefill_attention_flops_share=prefill, decode_attention_hbm_share=decode,
                      inter_node_latency_s=inter_latency, inter_node_share=inter_share,
                      cpu_step_s=0.0)
    a100["source"] = ("Vidur A100 DGX profiles (matmuls, elementwise, collectives); attention "
                      "shares from the H200 measurement; inter-node share from the H100 DGX")
    h100["source"] = ("Vidur H100 DGX profiles (matmuls, elementwise, collectives); attention "
                      "shares from the H200 measurement; inter-node share from the H100 DGX")
    h200["source"] = ("H200 measurement (matmuls, attention; eager timings, host dispatch in "
                      "profile_floor_s); kernel launch, elementwise and collectives from the "
                      "H100 (Vidur)")
    l4 = dict(a100, source="uncalibrated: no L4 data; every factor is the A100's")
    out = {"a100-80gb": a100, "h100-80gb": h100, "h200": h200, "l4": l4}
    return {name: {k: (float(v) if not isinstance(v, str) else v) for k, v in d.items()}
            for name, d in out.items()}


# -- comparison -----------------------------------------------------------------------------
def _err(predicted, measured) -> np.ndarray:
    return np.asarray(predicted) / np.asarray(measured) - 1.0


def _row(family, gpu, model, tp, errors) -> dict:
    e = np.asarray(errors)
    return dict(family=family, gpu=str(gpu), model=str(model), tp=int(tp), n=len(e),
                median=float(np.median(np.abs(e))), worst=float(np.max(np.abs(e))),
                bias=float(np.median(e)), errors=e)


def _groups(s: dict, *keys):
    seen = sorted(set(zip(*(s[k] for k in keys), strict=True)), key=str)
    for values in seen:
        yield values, _select(s, **dict(zip(keys, values, strict=True)))


def _matmul_pred(s: dict, effs: dict) -> np.ndarray:
    out = np.empty(len(s["tokens"]))
    for (gpu,), one in _groups(s, "gpu"):
        e, mask = effs[gpu], s["gpu"] == gpu
        out[mask] = matmul_s(e, GPUS[gpu], one["tokens"], one["k"], one["n"], e.profile_floor_s)
    return out


#: Names of the whole-layer kinds in the tables.
LAYER_KINDS = ("layer w/o attention, decode-sized", "layer w/o attention, prefill-sized",
               "decode layer (matmuls + attention)", "prefill layer (matmuls + attention)")


def _attention_pred(att: dict, e: Efficiency) -> np.ndarray:
    g, floor = GPUS[att["gpu"][0]], e.profile_floor_s
    return np.where(att["phase"] == "decode",
                    floor + decode_attention_s(e, g, att["kv_bytes"]),
                    floor + prefill_attention_s(e, g, att["flops"], att["kv_bytes"]))


def _vidur_layers(profiles: Profiles, effs: dict) -> list[dict]:
    """Vidur's layers without attention: each row's matmuls and elementwise kernels summed."""
    mm, ew = _select(profiles.matmul, source="vidur"), profiles.elementwise
    ew = {k: v[ew["op"] != "emb"] for k, v in ew.items()}
    ew_pred = np.empty(len(ew["row"]))
    for (gpu,), one in _groups(ew, "gpu"):
        e = effs[gpu]
        ew_pred[ew["gpu"] == gpu] = elementwise_s(e, GPUS[gpu], one["nbytes"], e.profile_floor_s)
    size = int(mm["row"].max()) + 1
    measured = (np.bincount(mm["row"], mm["measured_s"], size)
                + np.bincount(ew["row"], ew["measured_s"], size))
    predicted = (np.bincount(mm["row"], _matmul_pred(mm, effs), size)
                 + np.bincount(ew["row"], ew_pred, size))
    first = _select(mm, op=MATMULS[0])
    return [dict(kind=LAYER_KINDS[0 if t <= DECODE_SIZED_TOKENS else 1], gpu=str(g), model=str(m),
                 tp=int(tp), tokens=int(t), context=0, measured_s=float(measured[r]),
                 predicted_s=float(predicted[r]))
            for g, m, tp, t, r in zip(first["gpu"], first["model"], first["tp"],
                                      first["tokens"], first["row"], strict=True)]


def _h200_layers(profiles: Profiles, effs: dict) -> list[dict]:
    """H200 whole layers: the four matmuls at the batch's tokens plus the attention."""
    out = []
    mm = _select(profiles.matmul, gpu="h200")
    for (name, tp), att in _groups(profiles.attention, "model", "tp"):
        ops = _select(mm, model=name, tp=tp)
        sums: dict[int, np.ndarray] = {}
        for t, m, p in zip(ops["tokens"], ops["measured_s"], _matmul_pred(ops, effs),
                           strict=True):
            sums[int(t)] = sums.get(int(t), np.zeros(2)) + (m, p)
        att_pred = _attention_pred(att, effs["h200"])
        for i, phase in enumerate(att["phase"]):
            decode = phase == "decode"
            tokens = int(att["batch"][i] if decode else att["q_len"][i])
            m, p = sums[tokens]
            out.append(dict(kind=LAYER_KINDS[2 if decode else 3], gpu="h200", model=str(name),
                            tp=int(tp), tokens=tokens, context=int(att["kv_len"][i]),
                            measured_s=float(m + att["measured_s"][i]),
                            predicted_s=float(p + att_pred[i])))
    return out


def layer_samples(profiles: Profiles, coefficients: dict) -> list[dict]:
    """Whole layers, predicted and profiled: Vidur's rows without attention (which Vidur does not
    ship) and the H200's matmuls plus attention. ``tokens`` is the batch's token count (for a
    decode layer, its batch size), ``context`` the KV length each sequence attends over."""
    effs = {k: Efficiency.from_dict(v) for k, v in coefficients.items()}
    return _vidur_layers(profiles, effs) + _h200_layers(profiles, effs)


def error_rows(profiles: Profiles, coefficients: dict) -> list[dict]:
    """Predicted vs profiled, one row per (family, GPU, model, TP degree): sample count ``n``,
    ``median`` and ``worst`` absolute relative error, median signed error ``bias``, and the
    ``errors`` themselves (predicted / profiled - 1)."""
    effs = {k: Efficiency.from_dict(v) for k, v in coefficients.items()}
    rows = []
    mm = profiles.matmul
    pred = _matmul_pred(mm, effs)
    for (gpu, name, tp, op), one in _groups(mm, "gpu", "model", "tp", "op"):
        mask = (mm["gpu"] == gpu) & (mm["model"] == name) & (mm["tp"] == tp) & (mm["op"] == op)
        rows.append(_row(f"matmul {op}", gpu, name, tp, _err(pred[mask], one["measured_s"])))
    for (gpu, name, tp), one in _groups(profiles.elementwise, "gpu", "model", "tp"):
        e, g = effs[gpu], GPUS[gpu]
        layer = _layer_elementwise(one)
        rows.append(_row("elementwise (per layer)", gpu, name, tp, _err(
            elementwise_s(e, g, layer["nbytes"], e.profile_floor_s).sum(axis=0),
            layer["measured_s"])))
        emb = _select(one, op="emb")
        rows.append(_row("embedding", gpu, name, tp, _err(
            embedding_s(e, g, emb["nbytes"], e.profile_floor_s), emb["measured_s"])))
    for (name, tp, phase), one in _groups(profiles.attention, "model", "tp", "phase"):
        rows.append(_row(f"attention {phase}", "h200", name, tp,
                         _err(_attention_pred(one, effs["h200"]), one["measured_s"])))
    layers = layer_samples(profiles, coefficients)
    for kind in LAYER_KINDS:
        sel = [x for x in layers if x["kind"] == kind]
        for key in sorted({(x["gpu"], x["model"], x["tp"]) for x in sel}, key=str):
            one = [x for x in sel if (x["gpu"], x["model"], x["tp"]) == key]
            rows.append(_row(kind, *key, [_err(x["predicted_s"], x["measured_s"]) for x in one]))
    for (gpu, kind, p, same), one in _groups(profiles.network, "gpu", "kind", "p", "same_node"):
        e, g = effs[gpu], GPUS[gpu]
        if kind == "all_reduce":
            pred_s, family = allreduce_s(e, g, one["nbytes"], p), "all-reduce"
        elif same:
            pred_s, family = send_s(e, g, one["nbytes"]), "send in node"
        else:
            pred_s = send_s(e, g, one["nbytes"], INTER_NODE_GB_S["ib-ndr"])
            family = "send across nodes (as NDR)"
        rows.append(_row(family, gpu, "-", p, _err(pred_s, one["measured_s"])))
    return rows


def summary(rows: list[dict]) -> list[dict]:
    """Per GPU and kind (operators, whole layers, collectives): the median and the worst
    absolute relative error over all their samples."""
    kinds = {"operators": ("matmul", "elementwise", "embedding", "attention"),
             "whole layers": ("layer", "decode layer", "prefill layer"),
             "collectives": ("all-reduce", "send")}
    out = []
    for gpu in sorted({r["gpu"] for r in rows}):
        for kind, prefixes in kinds.items():
            sel = [r for r in rows if r["gpu"] == gpu and r["family"].startswith(prefixes)]
            if kind == "collectives":
                sel = [r for r in sel if "across" not in r["family"]]
            if not sel:
                continue
            errors = np.abs(np.concatenate([r["errors"] for r in sel]))
            out.append(dict(gpu=gpu, kind=kind, samples=len(errors),
                            median=float(np.median(errors)), worst=float(errors.max())))
    return out


def whole_steps(coefficients: dict) -> list[tuple[str, float, float]]:
    """``(label, predicted_s, profiled_s)`` for the README's three Llama-2-7B A100 TP1 steps."""
    from .perf import PerfModel

    eff = Efficiency.from_dict(coefficients["a100-80gb"])
    pm = PerfModel("llama-2-7b", "a100-80gb", efficiency=eff)
    return [(label, pm.iteration_s(chunks, n, context), profiled)
            for label, chunks, n, context, profiled in README_STEPS]

