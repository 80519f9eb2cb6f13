"""The level above one GPU's HBM: a peer's HBM over a link. Link presets and topologies, every number with
its source.

A Link's rates are one GPU's, in one direction, in bytes per second (send and receive run at once on a full
duplex link). Bidirectional "total" figures from datasheets are halved.

    >>> from gpusim import links
    >>> links.get_link("nvlink4").send_bytes_per_s
    450000000000.0
"""
from dataclasses import dataclass

from .hardware import by_name
from .shape import positive_int, positive_number

# Per-step overhead of a point-to-point exchange (NCCL's launch and handshake): an assumption, not measured
# here; of the order of NCCL's small-message latency on NVLink and InfiniBand (a few microseconds).
ASSUMED_STEP_LATENCY_S = 10e-6


@dataclass(frozen=True)
class Link:
    name: str
    send_bytes_per_s: float  # one GPU's send rate to a peer, one direction (NCCL send/recv where measured)
    alltoall_bytes_per_s: float | None = None  # an all-to-all's bytes that leave a rank, over the time (nccl-tests
    # "busbw": its algbw, a rank's whole buffer over the time, times (P-1)/P); None: the send rate
    step_latency_s: float = ASSUMED_STEP_LATENCY_S
    source: str = ""

    def __post_init__(self):
        """One line naming a rate that is not positive and finite, or a latency that is negative or not finite."""
        positive_number(f"Link {self.name!r}: send_bytes_per_s", self.send_bytes_per_s)
        if self.alltoall_bytes_per_s is not None:
            positive_number(f"Link {self.name!r}: alltoall_bytes_per_s", self.alltoall_bytes_per_s)
        positive_number(f"Link {self.name!r}: step_latency_s", self.step_latency_s, zero=True)

    def alltoall_time_s(self, buffer_bytes, gpus):
        """One all-to-all of `buffer_bytes` per rank among `gpus` ranks: its (P-1)/P leaves over the link."""
        if gpus == 1:
            return 0.0
        return buffer_bytes * (gpus - 1) / gpus / (self.alltoall_bytes_per_s or self.send_bytes_per_s) + \
            self.step_latency_s

    def send_time_s(self, nbytes):
        """One step's point-to-point transfer: `nbytes` sent (and as many received) at once."""
        return nbytes / self.send_bytes_per_s + self.step_latency_s


LINKS = {link.name: link for link in [
    # NVIDIA H100 datasheet: "NVLink: 900GB/s" (fourth generation, 18 links, both directions): 450 GB/s each way
    Link("nvlink4", 450e9, source="H100/H200 datasheet: NVLink 4, 900 GB/s bidirectional"),
    # The lent pair of H200s (NV18, one host), as issue 25 states its author measured them (2026-12-01; no run of
    # this project's has, and no results file holds them): NCCL send/recv 359 GB/s per
    # direction, a peer copy 396 GB/s, NCCL all-to-all 660 GB/s algorithm bandwidth: over two ranks half of each
    # buffer leaves, 330 GB/s (its bus bandwidth, which is what a rank of P sends its (P-1)/P at)
    Link("nvlink4-h200-measured", 359e9, alltoall_bytes_per_s=660e9 / 2,
         source="two H200s, NCCL send/recv 359 GB/s, all-to-all algbw 660 GB/s, busbw 330 (issue 25's figures, "
                "measured by its author 2026-12-01)"),
    Link("nvlink4-h200-peer-copy", 396e9,
         source="two H200s, cudaMemcpyPeer 396 GB/s (issue 25's figure, measured by its author 2026-12-01)"),
    # NVIDIA A100 datasheet: "NVLink: 600GB/s" (third generation, both directions): 300 GB/s each way
    Link("nvlink3", 300e9, source="A100 datasheet: NVLink 3, 600 GB/s bidirectional"),
    # PCI-SIG PCIe 5.0: 32 GT/s per lane, x16, 128b/130b: 63 GB/s each way ("64 GB/s" nominal)
    Link("pcie5", 64e9, source="PCIe 5.0 x16: 64 GB/s per direction, nominal"),
    # NVIDIA ConnectX-7 / Quantum-2: InfiniBand NDR 400 Gb/s per port, one port per GPU (DGX H100)
    Link("ib-ndr", 50e9, source="InfiniBand NDR: 400 Gb/s = 50 GB/s per GPU per direction"),
    # Ring Attention (Liu, Zaharia, Abbeel 2023), Table 2: "A100 InfiniBand", 12.5 GB/s (100 Gb/s)
    Link("ib-a100-ring-paper", 12.5e9, source="Ring Attention paper, Table 2: A100 InfiniBand 12.5 GB/s"),
    # TPU inter-chip interconnect, unidirectional per chip, as the Ring Attention paper's Table 2 gives them
    # (Cloud TPU's v5e page: 1,600 Gbps = 200 GB/s ICI per chip; the paper's 186 may be that in GiB/s)
    Link("tpu-v3-ici", 112e9, source="Ring Attention paper, Table 2: TPU v3 112 GB/s"),
    Link("tpu-v4-ici", 268e9, source="Ring Attention paper, Table 2: TPU v4 268 GB/s"),
    Link("tpu-v5e-ici", 186e9, source="Ring Attention paper, Table 2: TPU v5e 186 GB/s"),
]}


@dataclass(frozen=True)
class Topology:
    """GPUs in nodes: `gpus_per_node` joined by `intra`, nodes joined by `inter` (None: one node only)."""
    name: str
    gpus_per_node: int
    intra: Link
    inter: Link | None = None

    def __post_init__(self):
        """One line naming a node size that is not a positive integer, or a link that is not a Link."""
        positive_int(f"Topology {self.name!r}: gpus_per_node", self.gpus_per_node)
        for name, link in (("intra", self.intra), ("inter", self.inter)):
            if not isinstance(link, Link) and not (name == "inter" and link is None):
                raise ValueError(f"Topology {self.name!r}: {name}={link!r} must be a gpusim.links.Link")

    def link_for(self, gpus):
        """The link a collective over `gpus` GPUs waits on: the slower one, once it spans nodes."""
        if gpus <= self.gpus_per_node:
            return self.intra
        if self.inter is None:
            raise ValueError(f"gpus={gpus}: topology {self.name!r} is one node of {self.gpus_per_node} GPUs")
        return self.inter


TOPOLOGIES = {t.name: t for t in [
    Topology("node8-nvlink4", 8, LINKS["nvlink4"]),  # DGX H100/H200: 8 GPUs, NVSwitch, every pair at NVLink 4
    Topology("nodes-nvlink4-ib-ndr", 8, LINKS["nvlink4"], LINKS["ib-ndr"]),  # DGX H100 SuperPOD: one NDR port a GPU
]}


def get_link(link):
    """A Link or Topology from its name (case-insensitive), or one passed through."""
    return by_name("link", "links", link, {**LINKS, **TOPOLOGIES}, (Link, Topology))


# Ring Attention (Liu, Zaharia, Abbeel 2023), Table 2's devices: the bf16 FLOP rate and the link of each.
TPU_BF16_FLOPS_PER_S = {
    "TPU v3": 123e12,  # Cloud TPU docs: v3 123 TFLOPS bf16 per chip (Ring Attention Table 2: 123)
    "TPU v4": 275e12,  # Cloud TPU docs: v4 275 TFLOPS bf16 per chip
    "TPU v5e": 196e12,  # Ring Attention Table 2: 196 (Cloud TPU docs: v5e 197 TFLOPS bf16)
}
