"""Speculative decoding: a proposer drafts K tokens per sequence, the target verifies K + 1.

A step of a replica that speculates (vLLM's ``speculative_config``) has three parts:

1. **the draft's proposal**: ``ngram`` looks the last tokens up in the request's own text on the
   host (no GPU work; :data:`NGRAM_LOOKUP_S` a sequence); ``eagle`` runs EAGLE's one-layer head
   (a decoder layer of the target's shape, its input projection from twice the hidden size, the
   target's LM head) K times; ``draft`` runs a smaller model of the catalog (``draft_model``, on
   the same GPUs at the same tensor parallelism) K times, each a forward pass of its own
   (:class:`~.model.PerfModel` of that model). The first pass also reads the step's prompt
   chunks, so the proposer's KV covers the prompt;
2. **the target's verification**: one iteration in which every decoding sequence brings K + 1
   query tokens (its last token and the K drafted), so the step's matmuls run over
   ``batch x (K + 1)`` tokens and the LM head and sampler over as many rows: the existing
   step-time model at that token count. Attention stays memory-bound: each sequence's KV is
   read once for its K + 1 queries, so its time is the decode attention's per token of context
   (an assumption: with K + 1 <= 8 queries per KV head the reads still dominate);
3. **the accepted tokens**: each drafted token is accepted with probability ``accept`` if all
   before it were (Leviathan et al. 2023, https://arxiv.org/abs/2211.17192, section 3.1), so a
   step yields ``1 + min(K, G)`` tokens, ``G`` geometric, in expectation
   ``(1 - a^(K+1)) / (1 - a)`` (:func:`expected_tokens`). The draws are made per sequence per
   step by :mod:`..replica.speculation`.

The gain falls with the batch: at a small batch a step is memory-bound and K + 1 tokens cost
about what one does; as ``batch x (K + 1)`` grows the matmuls turn compute-bound, the step
crosses CUDA graphs' largest captured size (512 tokens) and runs eagerly, and the verification
costs more than the tokens it saves. The model speculates at every batch size with a fixed K,
as a vLLM V1 engine started with a ``speculative_config`` does; vLLM V0's switch that stopped
speculating above a queue size (``speculative_disable_by_batch_size``,
https://github.com/vllm-project/vllm/pull/5000) and the dynamic speculation length its RFC
proposed (https://github.com/vllm-project/vllm/issues/4565) are not modelled: whether to
speculate at a load is the user's choice, and the lesson's.

**Async scheduling** (vLLM PR #24799, https://github.com/vllm-project/vllm/pull/24799): the
host prepares the next step while the draft runs, but waits for the target's forward pass, so
with async scheduling a step takes ``verification + max(draft, host) + serial``. vLLM 0.14
turns async scheduling on with EAGLE only (PR #31998,
https://github.com/vllm-project/vllm/pull/31998: "disabled implicitly for non-EAGLE/MTP
types"); :class:`~..cluster.deployment.Design` does the same (an engine default of on becomes off
with ``ngram`` or ``draft``; asking for it is refused). Speculation with pipeline parallelism is
refused, as vLLM refuses it.

**KV for the drafted tokens**: a step writes K + 1 tokens of KV per sequence, so it needs the
blocks of ``computed + K + 1`` tokens; the blocks past the accepted tokens go back at the step's
end (vLLM keeps them with the request as lookahead slots; the peak, taken at the step's start,
is the same). The proposer's own KV (a draft model's layers; EAGLE's one layer) shares the
target's blocks, so each token holds both, and a draft model's weights come out of the memory
the cache gets (:meth:`SpecPerfModel.kv_capacity_tokens`).

Defaults, per method, from published measurements (docs/serving-calibration.md, "Speculative
decoding", gives each with its error): :data:`DEFAULT_TOKENS`, :data:`DEFAULT_ACCEPT`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError
from .catalog import BYTES_PER_PARAM, MODELS
from .host import HostCosts
from .kernels import matmul_s
from .model import GPU_MEMORY_UTILIZATION, PerfModel, _check_batch

__all__ = ["SPEC_METHODS", "SPEC_SYNC_ONLY", "SpecDecode", "SpecPerfModel", "expected_tokens",
           "DEFAULT_TOKENS", "DEFAULT_ACCEPT", "ACCEPT_SOURCES", "NGRAM_LOOKUP_S",
           "MAX_SPEC_TOKENS"]

SPEC_METHODS = ("none", "ngram", "eagle", "draft")
#: The methods vLLM 0.14 runs without async scheduling (PR #31998: on by default with EAGLE/MTP
#: only, "disabled implicitly for non-EAGLE/MTP types").
SPEC_SYNC_ONLY = ("ngram", "draft")
#: The most drafted tokens a step may propose (vLLM's examples go to 7; more is refused).
MAX_SPEC_TOKENS = 16
#: K by method: vLLM's documentation examples (EAGLE: ``num_speculative_tokens`` 3; n-gram and a
#: draft model: 5), https://docs.vllm.ai/en/v0.10.0/features/spec_decode.html
DEFAULT_TOKENS = {"ngram": 5, "eagle": 3, "draft": 5}
#: The per-position acceptance rate by method, solved from a published mean acceptance length
#: ``L`` at ``K`` drafted tokens with L = (1 - a^(K+1)) / (1 - a) (see ACCEPT_SOURCES). A draft
#: model has none: it depends on the pair of models, so ``spec_accept`` must be given.
DEFAULT_ACCEPT = {"eagle": 0.57, "ngram": 0.70}
ACCEPT_SOURCES = {
    "eagle": ("vLLM V1, EAGLE-LLaMA3-Instruct-8B on Llama 3 8B, MT-Bench, max_num_seqs 1: mean "
              "acceptance length 1.89 at K = 2 (a = 0.57) and 2.08 at K = 4 (a = 0.54), "
              "https://github.com/vllm-project/vllm/pull/16035#issuecomment-2790985075"),
    "ngram": ("vLLM V1, n-gram (prompt_lookup 2-5) on Llama 3.1 8B, code editing "
              "(vdaita/edit_5k_char), K = 5: 2.96 tokens per step over every step (a = 0.70), "
              "https://github.com/vllm-project/vllm/pull/24344 (its description)"),
}
#: Host seconds per sequence per step of vLLM's n-gram lookup (a numba-compiled match over the
#: request's tokens, on the CPU, in the step's path). An assumption: no published profile
#: separates it; docs/serving-calibration.md gives its range.
NGRAM_LOOKUP_S = 2e-5


def expected_tokens(accept: float, tokens: int) -> float:
    """Tokens a verification step yields on average: ``(1 - a^(K+1)) / (1 - a)``, K + 1 at
    ``a = 1`` (Leviathan et al. 2023, equation 1)."""
    if accept >= 1.0:
        return float(tokens + 1)
    return (1.0 - accept ** (tokens + 1)) / (1.0 - accept)


@dataclass(frozen=True)
class SpecDecode:
    """How a replica speculates: ``method`` (one of SPEC_METHODS), ``tokens`` K drafted a step
    (None: the method's default), ``accept`` the per-position acceptance rate, 0 to 1 (None:
    the method's published default), ``draft_model`` the catalog model that drafts
    (``draft`` only). Validated where made; ``method="none"`` takes no other knob."""

    method: str = "none"
    tokens: int | None = None
    accept: float | None = None
    draft_model: str | None = None

    def __post_init__(self):
        m = self.method
        if not isinstance(m, str) or m not in SPEC_METHODS:
            raise InputError(f"spec_method: {m!r}; allowed: {', '.join(SPEC_METHODS)}")
        if m == "none":
            for knob, v in (("spec_tokens", self.tokens), ("spec_accept", self.accept),
                            ("draft_model", self.draft_model)):
                if v is not None:
                    raise InputError(f"{knob}: {v!r} with spec_method 'none'; allowed: a "
                                     "spec_method of ngram, eagle or draft with it")
            return
        k = DEFAULT_TOKENS[m] if self.tokens is None else self.tokens
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_SPEC_TOKENS:
            raise InputError(f"spec_tokens: {self.tokens!r}; allowed: a whole number from 1 "
                             f"to {MAX_SPEC_TOKENS}")
        object.__setattr__(self, "tokens", k)
        a = self.accept
        if a is None:
            if m not in DEFAULT_ACCEPT:
                raise InputError(f"spec_accept: none given for spec_method {m!r}: a draft "
                                 "model's acceptance depends on the pair of models and no "
                                 "default is carried; allowed: a rate from 0 to 1")
            a = DEFAULT_ACCEPT[m]
        if isinstance(a, bool) or not isinstance(a, int | float) or not 0.0 <= a <= 1.0:
            raise InputError(f"spec_accept: {a!r}; allowed: a number from 0 to 1 (the chance "
                             "a drafted token is accepted when those before it were)")
        object.__setattr__(self, "accept", float(a))
        if m == "draft":
            if self.draft_model is None:
                raise InputError("draft_model: none given for spec_method 'draft'; allowed: "
                                 f"a catalog model: {', '.join(MODELS)}")
            if self.draft_model not in MODELS:
                raise InputError(f"draft_model: {self.draft_model!r}; allowed: "
                                 f"{', '.join(MODELS)}")
        elif self.draft_model is not None:
            raise InputError(f"draft_model: {self.draft_model!r} with spec_method {m!r}; "
                             "allowed: only with spec_method 'draft'")

    @property
    def on(self) -> bool:
        return self.method != "none"

    @property
    def expected_tokens(self) -> float:
        """Tokens a step yields on average (1 when off)."""
        return expected_tokens(self.accept, self.tokens) if self.on else 1.0

    def label(self) -> str:
        if not self.on:
            return "no speculation"
        who = f"draft {self.draft_model}" if self.method == "draft" else self.method
        return f"{who} K={self.tokens} a={self.accept:g}"


class SpecPerfModel:
    """A replica that speculates: ``base`` (a :class:`~.model.PerfModel`) verifying K + 1
    tokens a decoding sequence each step, plus the proposer's cost, KV and weights.

    ``iteration_s(prefill_chunks, n_decode, decode_context_tokens)`` is one speculative step
    (``decode_context_tokens`` as for ``base``: the decoders' cached tokens plus one each);
    the rest of the interface is ``base``'s, but for the KV capacity and the bytes a token and
    the weights hold on a GPU, which count the proposer's too. ``spec`` is the
    :class:`SpecDecode`; the simulators read ``spec.tokens`` for the KV a step takes."""

    def __init__(self, base, spec: SpecDecode):
        if not spec.on:
            raise InputError("spec: method 'none' needs no SpecPerfModel; use the base model")
        if getattr(base, "pp", 1) != 1:
            raise InputError(f"spec_method: {spec.method!r} with pp {base.pp}; vLLM does not "
                             "speculate with pipeline parallelism (allowed: pp 1)")
        if not hasattr(base, "_token_s"):
            raise InputError(f"spec_method: {spec.method!r} needs the roofline model (a "
                             f"PerfModel), got {type(base).__name__}")
        self.base, self.spec = base, spec
        self.async_scheduling = bool(getattr(base, "async_scheduling", False))
        self.draft = None
        if spec.method == "draft":
            self.draft = _draft_model(base, spec.draft_model)
        self.kv_capacity_tokens()   # target and proposer must fit

    def __repr__(self) -> str:
        return f"SpecPerfModel({self.base!r}, {self.spec!r})"

    def __getattr__(self, name):     # the rest of the interface: the base model's
        if name in ("base", "spec", "draft"):
            raise AttributeError(name)
        return getattr(self.base, name)

    # -- one step ------------------------------------------------------------------------
    def iteration_s(self, prefill_chunks=(), n_decode: int = 0,
                    decode_context_tokens: int = 0) -> float:
        chunks = _check_batch(prefill_chunks, n_decode, decode_context_tokens)
        base = self.base
        if sum(c[0] for c in chunks) + n_decode == 0:
            return 0.0
        verify = self._verify_gpu_s(chunks, n_decode, decode_context_tokens)
        draft = self.draft_s(chunks, n_decode, decode_context_tokens)
        if self.async_scheduling:   # the host overlaps the draft only (vLLM PR #24799)
            host = base.host.seconds(len(chunks) + n_decode)
            return verify + (draft if draft > host else host) + base.serial_s
        return verify + draft      # the host's time is inside the verification's tables

    def _verify_gpu_s(self, chunks: list, n: int, ctx: int) -> float:
        """The target's iteration with K + 1 query tokens a decoder (its host time inside,
        without async scheduling, as ``base.iteration_s`` has it)."""
        base, k = self.base, self.spec.tokens
        tokens = sum(c[0] for c in chunks) + n * (k + 1)
        seqs, rows = len(chunks) + n, len(chunks) + n * (k + 1)
        seconds = base._token_s(tokens) + base._seq_s(rows)
        if not base.async_scheduling:   # the host's per-sequence work is per sequence, not row
            seconds -= base.host.per_seq_s * (rows - seqs)
        if chunks:
            seconds += base._prefill_attention_s(chunks)
        return seconds + base._decode_per_token_s * (ctx + n * k)

    def draft_s(self, chunks=(), n_decode: int = 0, decode_context_tokens: int = 0) -> float:
        """Seconds of the proposal for this step: K passes of the draft model or of EAGLE's
        head (the first over the step's prompt chunks too), or the host's n-gram lookups."""
        spec, n, ctx = self.spec, n_decode, decode_context_tokens
        chunks = list(chunks)
        if spec.method == "ngram":
            return NGRAM_LOOKUP_S * n
        if spec.method == "draft":
            d = self.draft
            first = d.iteration_s(chunks, n, ctx)
            return first + ((spec.tokens - 1) * d.iteration_s((), n, ctx) if n else 0.0)
        # EAGLE: one layer of the target's shape, its fc, the target's LM head and sampler
        new = sum(c[0] for c in chunks)
        first = self._head_pass_s(new + n, len(chunks) + n, chunks, ctx)
        rest = self._head_pass_s(n, n, [], ctx) if n else 0.0
        return first + (spec.tokens - 1) * rest

    def _head_pass_s(self, tokens: int, rows: int, chunks: list, ctx: int) -> float:
        base = self.base
        if tokens == 0:
            return 0.0
        layer, _first, last, _in, _cross, _host = base._parts(tokens, max(rows, 1))
        h = base.model.hidden
        fc = matmul_s(base.eff, base.gpu, tokens, 2 * h, h // base.tp)
        attention = base._decode_per_token_s / base.model.layers * ctx
        if chunks:
            attention += base._prefill_attention_s(chunks) / base.model.layers
        return float(layer + last + fc + attention)

    # -- memory --------------------------------------------------------------------------
    @property
    def proposer_kv_bytes_per_token_per_gpu(self) -> int:
        """KV bytes a token holds on each GPU for the proposer: a draft model's layers, EAGLE's
        one layer, none for n-gram."""
        if self.spec.method == "draft":
            return self.draft.kv_bytes_per_token_per_gpu
        if self.spec.method == "eagle":
            return self.base.shard.kv_bytes_per_token
        return 0

    @property
    def proposer_weights_bytes_per_gpu(self) -> float:
        """Weight bytes on each GPU for the proposer: a draft model's share; EAGLE's layer and
        its fc (BF16; the LM head and embedding are the target's); none for n-gram."""
        if self.spec.method == "draft":
            return self.draft.weights_bytes_per_gpu
        if self.spec.method == "eagle":
            sh, h = self.base.shard, self.base.model.hidden
            layer = sum(kk * nn for kk, nn in sh.matmuls.values()) * BYTES_PER_PARAM
            return float(layer + 2 * h * h * BYTES_PER_PARAM / self.base.tp)
        return 0.0

    @property
    def kv_bytes_per_token_per_gpu(self) -> int:
        return self.base.kv_bytes_per_token_per_gpu + self.proposer_kv_bytes_per_token_per_gpu

    @property
    def weights_bytes_per_gpu(self) -> float:
        return self.base.weights_bytes_per_gpu + self.proposer_weights_bytes_per_gpu

    def kv_capacity_tokens(self, usable_share: float = GPU_MEMORY_UTILIZATION) -> int:
        """Tokens of KV the replica holds with the proposer's weights out of the memory and its
        KV beside the target's in every token."""
        base = self.base
        tokens = base.kv_capacity_tokens(usable_share)
        free = tokens * base.kv_bytes_per_token_per_gpu - self.proposer_weights_bytes_per_gpu
        per = self.kv_bytes_per_token_per_gpu
        if free < per:
            raise InputError(f"spec_method: {self.spec.method!r}: the proposer's weights "
                             f"({self.proposer_weights_bytes_per_gpu / 1e9:.1f} GB a GPU) leave "
                             f"no room for KV cache beside {base.model.name}; allowed: more "
                             "GPUs (tp), a smaller draft_model, or spec_method none")
        return int(free // per)


def _draft_model(base, name: str):
    """The draft model's PerfModel: ``name`` on the target's GPU at its tensor parallelism,
    its launches and kernels those of the target's engine, no host time of its own (its
    passes run inside the target's step)."""
    from .catalog import model as shape
    target, draft = base.model, shape(name)
    if draft.vocab != target.vocab:
        raise InputError(f"draft_model: {name!r} has a vocabulary of {draft.vocab} tokens, "
                         f"{target.name} of {target.vocab}; allowed: a model that shares the "
                         "target's tokenizer: " + ", ".join(
                             n for n, m in MODELS.items() if m.vocab == target.vocab
                             and m.params < target.params))
    if draft.params >= target.params:
        raise InputError(f"draft_model: {name!r} is not smaller than {target.name}; allowed: "
                         "a smaller model of the same vocabulary")
    host = HostCosts(0.0, 0.0, base.host.dispatch_s, "a draft pass runs inside the step")
    try:
        return PerfModel(draft, base.gpu, tp=base.tp, inter_node=base.inter_node,
                         cuda_graphs=base.cuda_graphs, host=host, dtype="bf16")
    except InputError as e:
        raise InputError(f"draft_model: {name!r} at tp {base.tp}: {e}") from None
