"""Helpers for the serving tests: a simple cost model with exact closed forms, hand-built loads."""

from __future__ import annotations

import numpy as np

from schedatrix.serving.cluster.layout import Layout, ReplicaPlan
from schedatrix.serving.load.requests import ClosedLoop, Requests, SLOClass


class LinearCost:
    """An iteration costs base + per prefill token + quadratic attention + per decoder +
    per token of decode context: every term the real model has, with round numbers."""

    def __init__(self, base=0.004, prefill_tok=2e-5, attn=1e-9, decode=2e-4, ctx=2e-7,
                 link_tok=1e-6, remote_tok=1e-5):
        self.base, self.prefill_tok, self.attn = base, prefill_tok, attn
        self.decode, self.ctx = decode, ctx
        self.link_tok, self.remote_tok = link_tok, remote_tok

    def iteration_s(self, chunks, n_decode, decode_context_tokens):
        pre = sum(self.prefill_tok * c + self.attn * c * (cached + c) for c, cached in chunks)
        return self.base + pre + self.decode * n_decode + self.ctx * decode_context_tokens

    def decode_line(self, n_decode):
        return self.base + self.decode * n_decode, self.ctx

    def kv_transfer_s(self, tokens, same_node):
        return tokens * (self.link_tok if same_node else self.remote_tok)

    #: what swapping, restarts and link faults read from a performance model
    kv_bytes_per_token_per_gpu = 100_000
    weights_bytes_per_gpu = 1e9

    def cross_node_send_s(self, tokens):
        return 1e-6 * tokens + 1e-4


def layout(replicas=1, kv_blocks=10_000, engines=1, prefill=0, decode=0, span=False):
    """Mixed replicas (each on its own two nodes with ``span``: a pipeline across nodes),
    one to a node, or a split of prefill and decode replicas, two to a node."""
    plans = [ReplicaPlan("mixed", engines, kv_blocks, (2 * k, 2 * k + 1) if span else (k,))
             for k in range(replicas)]
    plans += [ReplicaPlan("prefill", engines, kv_blocks, (k // 2,)) for k in range(prefill)]
    plans += [ReplicaPlan("decode", engines, kv_blocks, (1 + k // 2,)) for k in range(decode)]
    return Layout(tuple(plans))


def poisson_load(n, rate, seed, inp=(50, 400), out=(1, 60), classes=None, hashes=False,
                 closed=None):
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1 / rate, n))
    inp_tok = rng.integers(inp[0], inp[1] + 1, n)
    out_tok = rng.integers(out[0], out[1] + 1, n)
    classes = classes or (SLOClass(),)
    shares = np.array([c.share for c in classes])
    cls = rng.choice(len(classes), n, p=shares / shares.sum()).astype(np.int16)
    kw = {}
    if hashes:
        # shared prefixes: each request starts with one of 5 system prompts (2 blocks of 32)
        offsets, values = [0], []
        for i in range(n):
            sysp = int(rng.integers(5))
            blocks = [1000 + sysp * 10 + b for b in range(2)]
            blocks += [10**6 + i * 100 + b for b in range(int(inp_tok[i]) // 32 - 2)]
            blocks = blocks[: int(inp_tok[i]) // 32]
            values += blocks
            offsets.append(len(values))
        kw = {"hash_offsets": np.array(offsets), "hash_values": np.array(values, np.int64)}
    return Requests(arrival, inp_tok.astype(np.int64), out_tok.astype(np.int64), cls,
                    tuple(classes), closed_loop=ClosedLoop(*closed) if closed else None, **kw)


def design_refusal(tmp_path, design_lines: str, capsys) -> str:
    """``serving run`` on a scenario whose one design holds ``design_lines``: its refusal,
    which must be one line on stderr with exit 2, nothing on stdout and no traceback."""
    from schedatrix.cli import main
    f = tmp_path / "s.toml"
    f.write_text(f"[load]\nrate = 2\nrequests = 20\n\n[[designs]]\n{design_lines}\n")
    code = main(["serving", "run", str(f)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    return err
