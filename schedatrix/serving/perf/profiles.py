"""Read the profiled GPU data of ``../shared/serving-data/`` into arrays (read only; never copied).

Vidur's profiles (``vidur/compute/<gpu>/.../mlp.csv``, ``vidur/network/<gpu>_dgx/*.csv``) give
one layer's operators by token count and tensor-parallel degree, and collectives by message size;
the H200 measurements (``h200/ops.csv``, ``h200/attention.csv``) give matmuls and attention of one
layer shard. ``row`` numbers the line of a Vidur file that a sample comes from (its operators
share it; Vidur repeats some token counts); -1 for the H200. Times are converted from the files'
milliseconds to seconds; every sample carries the shape the performance model needs to predict it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .catalog import ModelShape, model
from .shard import ELEMENTWISE, LayerShard

__all__ = ["Profiles", "read_profiles", "select", "layer_elementwise", "VIDUR_GPUS", "VIDUR_MODELS"]

#: Vidur's GPU folders and the catalog names they stand for.
VIDUR_GPUS = {"a100": "a100-80gb", "h100": "h100-80gb"}
#: Vidur's model folders and the catalog model of the same shape (Llama 3 and 3.1 share it).
VIDUR_MODELS = {"Llama-2-7b-hf": "llama-2-7b", "Llama-2-70b-hf": "llama-2-70b",
                "Meta-Llama-3-8B": "llama-3.1-8b", "Meta-Llama-3-70B": "llama-3.1-70b"}
#: The operator the H200 files call by another name.
H200_OPS = {"qkv_proj": "attn_pre_proj", "o_proj": "attn_post_proj",
            "gate_up_proj": "mlp_up_proj", "down_proj": "mlp_down_proj"}


@dataclass(frozen=True)
class Profiles:
    """Samples by family, each a dict of equal-length numpy arrays.

    matmul : source, gpu, model, tp, op, tokens, k, n, row, measured_s
    elementwise : gpu, model, tp, tokens, op, nbytes, row, measured_s (Vidur only; ``op``
        includes ``emb``, the per-iteration embedding)
    attention : gpu, model, tp, phase, batch, q_len, kv_len, flops, kv_bytes, measured_s (H200)
    network : gpu, kind (all_reduce, send_recv), p, nbytes, same_node, measured_s (Vidur DGX)
    """

    matmul: dict
    elementwise: dict
    attention: dict
    network: dict


def _arrays(rows: list[dict]) -> dict:
    if not rows:
        return {}
    return {key: np.array([r[key] for r in rows]) for key in rows[0]}


def _median_s(row: dict, op: str) -> float:
    return float(row[f"time_stats.{op}.median"]) * 1e-3


def _vidur_shape(name: str, row: dict) -> ModelShape:
    hidden, heads = int(row["n_embd"]), int(row["n_head"])
    return ModelShape(name, 0.0, 1, hidden, heads, int(row["n_kv_head"]), hidden // heads,
                      int(row["n_expanded_embd"]), int(row["vocab_size"]))


def _read_vidur_compute(root: Path, matmul: list, elementwise: list) -> None:
    for folder, gpu_name in VIDUR_GPUS.items():
        for path in sorted((root / "vidur" / "compute" / folder).glob("*/*/mlp.csv")):
            name = VIDUR_MODELS.get(path.parent.name, path.parent.name)
            with path.open(newline="") as f:
                for row in csv.DictReader(f):
                    row_id = len(matmul)  # the same for this row's operators
                    tokens, tp = int(row["num_tokens"]), int(row["num_tensor_parallel_workers"])
                    shard = LayerShard(_vidur_shape(name, row), tp)
                    for op, (k, n) in shard.matmuls.items():
                        matmul.append(dict(source="vidur", gpu=gpu_name, model=name, tp=tp, op=op,
                                           tokens=tokens, k=k, n=n, row=row_id,
                                           measured_s=_median_s(row, op)))
                    per_token = dict(shard.elementwise_bytes_per_token,
                                     emb=4 * shard.model.hidden)
                    for op in (*ELEMENTWISE, "emb"):
                        elementwise.append(dict(gpu=gpu_name, model=name, tp=tp, tokens=tokens,
                                                op=op, nbytes=tokens * per_token[op], row=row_id,
                                                measured_s=_median_s(row, op)))


def _read_vidur_network(root: Path, network: list) -> None:
    for folder, gpu_name in VIDUR_GPUS.items():
        for kind in ("all_reduce", "send_recv"):
            path = root / "vidur" / "network" / f"{folder}_dgx" / f"{kind}.csv"
            if not path.exists():
                continue
            with path.open(newline="") as f:
                for row in csv.DictReader(f):
                    p, per_node = int(row["num_workers"]), int(row["devices_per_node"])
                    if kind == "all_reduce" and p != per_node:
                        continue  # all-reduces across nodes: tensor parallelism stays in a node
                    network.append(dict(gpu=gpu_name, kind=kind, p=p, nbytes=int(row["size"]),
                                        same_node=per_node >= p, measured_s=_median_s(row, kind)))


def _read_h200(root: Path, matmul: list, attention: list) -> None:
    ops, att = root / "h200" / "ops.csv", root / "h200" / "attention.csv"
    if ops.exists():
        with ops.open(newline="") as f:
            for row in csv.DictReader(f):
                matmul.append(dict(source="h200", gpu="h200", model=row["model"],
                                   tp=int(row["tp"]), op=H200_OPS[row["op"]],
                                   tokens=int(row["tokens"]), k=int(row["k"]), n=int(row["n"]),
                                   row=-1, measured_s=float(row["median_ms"]) * 1e-3))
    if att.exists():
        with att.open(newline="") as f:
            for row in csv.DictReader(f):
                shard = LayerShard(model(row["model"]), int(row["tp"]))
                batch, q, kv = int(row["batch"]), int(row["q_len"]), int(row["kv_len"])
                pairs = q * (q + 1) // 2 if row["phase"] == "prefill" else kv
                attention.append(dict(
                    gpu="h200", model=row["model"], tp=shard.tp, phase=row["phase"],
                    batch=batch, q_len=q, kv_len=kv,
                    flops=batch * pairs * shard.attention_flops_per_pair,
                    kv_bytes=batch * kv * shard.kv_bytes_per_token,
                    measured_s=float(row["median_ms"]) * 1e-3))


def read_profiles(root: str | Path) -> Profiles:
    """Read every profile under ``root`` (the ``serving-data`` folder)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"no profiled data at {root}")
    matmul, elementwise, attention, network = [], [], [], []
    _read_vidur_compute(root, matmul, elementwise)
    _read_vidur_network(root, network)
    _read_h200(root, matmul, attention)
    return Profiles(_arrays(matmul), _arrays(elementwise), _arrays(attention), _arrays(network))


def select(family: dict, **where) -> dict:
    """The samples of ``family`` whose fields equal ``where``'s values."""
    mask = np.ones(len(next(iter(family.values()))), bool)
    for key, value in where.items():
        mask &= family[key] == value
    return {k: v[mask] for k, v in family.items()}


def layer_elementwise(s: dict) -> dict:
    """Each Vidur row's five elementwise kernels summed: the layer's elementwise family
    (``measured_s`` the sum; ``nbytes`` one line per kernel, shape (5, rows)). Every row
    gives each kernel once, in file order, so the selections line up."""
    layer = select(s, op=ELEMENTWISE[0])
    measured = np.zeros(len(layer["tokens"]))
    nbytes = []
    for op in ELEMENTWISE:
        one = select(s, op=op)
        measured += one["measured_s"]
        nbytes.append(one["nbytes"])
    return dict(layer, measured_s=measured, nbytes=np.array(nbytes))
