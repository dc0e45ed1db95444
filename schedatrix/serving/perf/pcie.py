"""Host-to-device bandwidth of each GPU's PCIe link: what a KV block copied back from CPU memory
moves at (the CPU tier of the KV cache, :mod:`..replica.cpu_tier`).

Effective, one direction, per GPU, from pinned host memory: about 80% of the link's raw rate
(PCIe Gen4 x16: 16 GT/s x 16 lanes, 128b/130b coding, 31.5 GB/s raw; Gen5 x16 twice that,
63 GB/s; PCI-SIG's specifications). The A100 SXM and the L4 sit on Gen4, the H100 SXM and the
H200 on Gen5 (NVIDIA's data sheets). Measured in use: a copy of KV from DRAM on a PCIe Gen5 H20
under vLLM 0.18.1's offloading connector ran at about 54 GB/s (gahow/agentic-kvc, tier-latency
experiment), 8% above the 50 GB/s here; ``bandwidthTest`` on Gen4 A100 hosts reads 24 to 26
GB/s. Error: +-20% (a host's NUMA placement and the copy's block size move it; vLLM's blog on
the connector, 2026-01-08, shows the copy slow with small per-layer blocks).
"""

from __future__ import annotations

from ...errors import InputError

__all__ = ["H2D_GB_S", "PCIE_SOURCE", "h2d_gb_s"]

#: GB/s host to device, per GPU, effective (see the module's sources).
H2D_GB_S = {"a100-80gb": 25.0, "l4": 25.0, "h100-80gb": 50.0, "h200": 50.0}
PCIE_SOURCE = ("PCIe Gen4 x16 ~25 GB/s effective (A100, L4), Gen5 x16 ~50 GB/s (H100, H200): "
               "80% of PCI-SIG's raw rates; a Gen5 H20 measured ~54 GB/s (vLLM 0.18.1)")


def h2d_gb_s(gpu: str) -> float:
    """The effective host-to-device GB/s of one ``gpu``'s PCIe link."""
    if gpu not in H2D_GB_S:
        raise InputError(f"gpu: no PCIe figure for {gpu!r}; allowed: {', '.join(H2D_GB_S)}")
    return H2D_GB_S[gpu]
