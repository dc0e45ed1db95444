"""A replica's LoRA adapters in memory (vLLM's LRU adapter managers): ``max_loras`` slots in
HBM and ``max_cpu_loras`` adapters in host memory, each least recently used dropped first.

A running request holds its adapter's slot until it leaves (done, preempted, or its KV sent
on); an adapter held by a running request is *active*. A waiting request whose adapter is not
active when ``max_loras`` adapters are is skipped by admission, as vLLM's scheduler skips it
(its batch holds at most ``max_loras`` distinct adapters), and waits for a slot; the requests
behind it may go first. Admitting a request whose adapter has no slot loads it into the least
recently used slot no running request holds: from host memory over PCIe, or, not there either,
from disk first (:mod:`.lora`).
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["AdapterSlots", "RESIDENT", "FROM_CPU", "FROM_DISK"]

#: Where an admitted request's adapter came from.
RESIDENT, FROM_CPU, FROM_DISK = 0, 1, 2


class AdapterSlots:
    """One scheduler's adapters: ``gpu_slots`` in HBM, ``cpu_slots`` in host memory."""

    def __init__(self, gpu_slots: int, cpu_slots: int):
        self.gpu_slots, self.cpu_slots = int(gpu_slots), int(cpu_slots)
        self.gpu: OrderedDict[int, None] = OrderedDict()   # LRU first
        self.cpu: OrderedDict[int, None] = OrderedDict()
        self.active: dict[int, int] = {}       # adapter -> running requests holding it
        self.held: dict[int, int] = {}         # request -> its adapter
        self.loads = [0, 0, 0]                 # admissions by RESIDENT, FROM_CPU, FROM_DISK

    def blocked(self, adapter: int) -> bool:
        """Whether a request of ``adapter`` must wait: every slot is held by another adapter."""
        return adapter not in self.active and len(self.active) >= self.gpu_slots

    def take(self, i: int, adapter: int) -> int:
        """Request i is admitted with ``adapter`` (not blocked): it holds the adapter's slot,
        loaded now if needed. Returns where the adapter came from."""
        if i in self.held:
            return RESIDENT
        self.held[i] = adapter
        self.active[adapter] = self.active.get(adapter, 0) + 1
        gpu = self.gpu
        if adapter in gpu:
            gpu.move_to_end(adapter)
            where = RESIDENT
        else:
            if len(gpu) >= self.gpu_slots:     # evict the oldest slot no request holds
                old = next(a for a in gpu if a not in self.active)
                del gpu[old]
            gpu[adapter] = None
            cpu = self.cpu
            if adapter in cpu:
                cpu.move_to_end(adapter)
                where = FROM_CPU
            else:
                cpu[adapter] = None
                if len(cpu) > self.cpu_slots:
                    cpu.popitem(last=False)
                where = FROM_DISK
        self.loads[where] += 1
        return where

    def release(self, i: int) -> None:
        """Request i leaves: its hold on its adapter's slot ends (nothing if it held none)."""
        adapter = self.held.pop(i, None)
        if adapter is None:
            return
        left = self.active[adapter] - 1
        if left:
            self.active[adapter] = left
        else:
            del self.active[adapter]
