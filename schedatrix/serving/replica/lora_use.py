"""How a scheduler uses its LoRA adapters (:mod:`.lora_slots`), the same way in both
simulators: a waiting request skipped while its adapter has no slot, its adapter loaded when
admitted (the copy's seconds charged to the iteration that admits it, not overlapped), and the
batched LoRA kernels' seconds of every iteration by its tokens and distinct adapters
(:mod:`.lora`)."""

from __future__ import annotations

from .lora import DISK_GB_S, LoraKernels
from .lora_slots import FROM_CPU, FROM_DISK, AdapterSlots

__all__ = ["LoraUse"]


class LoraUse:
    """Mixed into :class:`~.scheduler.SchedulerBase` (which sets ``sim`` and ``perf``)."""

    def lora_init(self) -> None:
        lora = self.sim.cfg.lora
        self.slots: AdapterSlots | None = None
        self.lora_kernels = None
        self.lora_load_s = 0.0       # seconds of iterations spent loading adapters
        self.lora_kernel_s = 0.0     # seconds of iterations in the LoRA kernels
        self.lora_skips = 0          # times a waiting request was skipped for want of a slot
        self.lora_loading = 0.0      # seconds of loads in the iteration being built
        self.lora_loads_before = [0, 0, 0]
        if lora is None:
            return
        perf = self.perf
        own = getattr(perf, "lora_kernels", None)    # a model with kernels of its own (tests)
        kernels = self.lora_kernels = own(lora.rank) if own else LoraKernels(perf, lora.rank,
                                                                              lora.targets)
        one = kernels.adapter_bytes          # one adapter's bytes on each GPU
        self.lora_cpu_s = one / (lora.h2d_gb_s * 1e9)
        self.lora_disk_s = self.lora_cpu_s + one * getattr(perf, "gpus", 1) / (DISK_GB_S * 1e9)

    def new_slots(self) -> AdapterSlots | None:
        """Fresh adapter slots for this scheduler (None without LoRA); a crash loses them."""
        lora = self.sim.cfg.lora
        if lora is None:
            return None
        if self.slots is not None:
            before, now = self.lora_loads_before, self.slots.loads
            self.lora_loads_before = [a + b for a, b in zip(before, now, strict=True)]
        return AdapterSlots(lora.max_loras, lora.max_cpu_loras)

    def lora_blocked(self, i: int) -> bool:
        """Request i waits for a slot (admission skips it)."""
        if self.slots.blocked(self.sim.adapter[i]):
            self.lora_skips += 1
            return True
        return False

    def lora_take(self, i: int) -> None:
        """Request i is admitted: it holds its adapter; a load joins this iteration."""
        where = self.slots.take(i, self.sim.adapter[i])
        if where == FROM_CPU:
            self.lora_loading += self.lora_cpu_s
        elif where == FROM_DISK:
            self.lora_loading += self.lora_disk_s

    @property
    def lora_loads(self) -> list[int]:
        """Admissions whose adapter was resident, came from host memory, came from disk."""
        now = self.slots.loads if self.slots is not None else [0, 0, 0]
        return [a + b for a, b in zip(self.lora_loads_before, now, strict=True)]

    def lora_step_s(self, members, tokens: int) -> float:
        """Seconds this iteration adds for LoRA: the kernels over its ``members`` (requests)
        and ``tokens``, plus its adapters' loads (and the loads are done)."""
        adapter = self.sim.adapter
        s = self.lora_kernels.seconds(tokens, len({adapter[i] for i in members}))
        self.lora_kernel_s += s
        if self.lora_loading:
            s += self.lora_loading
            self.lora_load_s += self.lora_loading
            self.lora_loading = 0.0
        return s
