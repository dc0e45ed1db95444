"""How well the fitted performance model matches the profiled GPUs: errors by operator family,
whole layers and collectives, and the data README's three whole-step figures.

Every error is predicted / profiled - 1, the prediction made with the same kernel formulas the
model uses (plus each profile's own fixed time per operator, ``profile_floor_s``).
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
from .shard import MATMULS

__all__ = ["error_rows", "layer_samples", "summary", "whole_steps", "README_STEPS",
           "LAYER_KINDS"]

#: The whole-step figures the data's README quotes (Llama-2-7B, A100, TP1): (label, prefill
#: chunks, decoding requests, summed decode context, profiled seconds).
README_STEPS = (
    ("decode, batch 1, 1,024 context", (), 1, 1024, 9.9e-3),
    ("decode, batch 64, 1,024 context", (), 64, 64 * 1024, 28.7e-3),
    ("prefill, 2,048 tokens", ((2048, 0),), 0, 0, 158e-3),
)
#: A sample standing for token counts above this is a prefill-sized batch in the tables.
DECODE_SIZED_TOKENS = 256


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
        yield values, select(s, **dict(zip(keys, values, strict=True)))


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
    mm, ew = select(profiles.matmul, source="vidur"), profiles.elementwise
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
    first = select(mm, op=MATMULS[0])
    return [dict(kind=LAYER_KINDS[0 if t <= DECODE_SIZED_TOKENS else 1], gpu=str(g), model=str(m),
                 tp=int(tp), tokens=int(t), context=0, measured_s=float(measured[r]),
                 predicted_s=float(predicted[r]))
            for g, m, tp, t, r in zip(first["gpu"], first["model"], first["tp"],
                                      first["tokens"], first["row"], strict=True)]


def _h200_layers(profiles: Profiles, effs: dict) -> list[dict]:
    """H200 whole layers: the four matmuls at the batch's tokens plus the attention."""
    out = []
    mm = select(profiles.matmul, gpu="h200")
    for (name, tp), att in _groups(profiles.attention, "model", "tp"):
        ops = select(mm, model=name, tp=tp)
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
        layer = layer_elementwise(one)
        rows.append(_row("elementwise (per layer)", gpu, name, tp, _err(
            elementwise_s(e, g, layer["nbytes"], e.profile_floor_s).sum(axis=0),
            layer["measured_s"])))
        emb = select(one, op="emb")
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
    """``(label, predicted_s, profiled_s)`` for the README's three Llama-2-7B A100 TP1 steps: the
    GPU's time alone (the README sums profiled operators; no host time is in them)."""
    from .model import PerfModel

    eff = Efficiency.from_dict(coefficients["a100-80gb"])
    pm = PerfModel("llama-2-7b", "a100-80gb", efficiency=eff, host_s=0.0)
    return [(label, pm.iteration_s(chunks, n, context), profiled)
            for label, chunks, n, context, profiled in README_STEPS]

