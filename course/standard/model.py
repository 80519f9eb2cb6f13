"""What notebook 2 shows from gpusim alone, as data: the bytes of S and P, standard attention's time terms as a
table, and how much of its time is moving bytes."""
import gpusim
from gpusim.passes.naive import MAX_ROW_ELEMENTS, row_elements, score_row, softmax_limits
from gpusim.units import fmt_bytes, fmt_time

from ..block_sliders import BLOCKS, config_error
from ..tables import time_terms
from ..widget import SEQS


def time_rows(result):
    """time_terms formatted for a table."""
    return [{"kernel": r["label"], "memory": fmt_time(r["t_memory"]), "matmul": fmt_time(r["t_matmul"]),
             "non-matmul": fmt_time(r["t_other"]), "SMs busy": f"{r['busy']:.0%}",
             "predicted": fmt_time(r["predicted"]), "bound by": r["bound"]} for r in time_terms(result)]


def sp_written_line(seq=4096, head_dim=128, dtype="fp16"):
    """The bytes standard attention writes to HBM for S, and for S and P, one head of `seq` tokens (gpusim's count)."""
    written = gpusim.simulate("naive", seq=seq, head_dim=head_dim, dtype=dtype).by_tensor
    s, p = written["S"]["write_bytes"], written["P"]["write_bytes"]
    return f"S written: {s:,} B; S and P written: {s + p:,} B"


def waiting_sentence(naive, flash, waiting_share, gpu):
    """How much of naive attention's predicted time is moving bytes (the scorecard's waiting_share, passed in),
    and how many times faster FlashAttention-2 is predicted, for two Results of the same shape."""
    c = naive.config
    return (f"gpusim on the {gpu}, N = {c.seq:,}, d = {c.head_dim}: moving the bytes takes {waiting_share:.0%} of "
            f"naive attention's predicted time; FlashAttention-2 is predicted "
            f"{naive.predicted_time_s / flash.predicted_time_s:.1f}x faster.")


def streaming_sentence(cfg):
    """Why the softmax kernel of a naive configuration streams each row of S three times, from the limits gpusim's
    softmax_limits finds exceeded: the row as the kernel loads it (N_kv rounded up to a power of two) in one thread
    block's fp32 registers, at most MAX_ROW_ELEMENTS, and the row in its SRAM. "" where a row is read once."""
    over = softmax_limits(cfg)
    if not over:
        return ""
    row, sram, elements = score_row(cfg) * cfg.itemsize, cfg.gpu.sram_bytes_per_block, row_elements(cfg)
    limits = [f"its {elements:,} elements (N_kv rounded up to a power of two, as the kernel loads it) are more than "
              f"the {MAX_ROW_ELEMENTS:,} a thread block holds in fp32 registers"] if "registers" in over else []
    limits += [f"its {fmt_bytes(row)} are more than the {fmt_bytes(sram)} of SRAM"] if "sram" in over else [
        f"its {fmt_bytes(row)} would fit the {fmt_bytes(sram)} of SRAM"]
    return (f" A row of S does not fit one thread block of the softmax: {'; '.join(limits)}. So the softmax streams "
            f"each row in chunks of {cfg.block_kv:,}, three times (max, sum, normalize): it reads S three times.")


def first_streamed_seq(gpu, head_dim, seqs=SEQS):
    """The first of `seqs` (the course's sequence slider) at which naive attention's softmax streams its rows."""
    return next(n for n in seqs if not gpusim.simulate("naive", seq=n, head_dim=head_dim, gpu=gpu).config.softmax_fits)


TRAFFIC_ALGOS = ("naive", "flash2")


def traffic_tile(gpu, head_dim, dtype="fp16"):
    """(block_q, block_kv): the one tile at which notebook 2 compares standard attention's bytes with
    FlashAttention-2's, at every N. gpusim's tile rule for FlashAttention-2 on the GPU's SRAM (gpusim.paper_blocks:
    Algorithm 1's, adapted to the Q blocks outer, Br = min(ceil(M / 4d), 128), Bc = min(Br, d); no paper gives it),
    Br halved until both algorithms' kernels run (FlashAttention-2 holds O_i, Br x d in fp32, in registers: at d =
    256 its 64 rows need more than a thread has). At one tile both read K and V alike."""
    block_q, block_kv = gpusim.paper_blocks("flash2", gpu, head_dim, dtype)
    shape = dict(seq=4096, head_dim=head_dim, dtype=dtype, gpu=gpu, block_kv=block_kv)  # SRAM, registers: any N
    while block_q > BLOCKS[0] and any(config_error(shape | dict(algo=algo, block_q=block_q)) for algo in TRAFFIC_ALGOS):
        block_q //= 2
    return block_q, block_kv


def tile_phrase(cfg):
    """Where traffic_tile's tile comes from, for a configuration at it: gpusim's rule for FlashAttention-2 (Algorithm
    1's, adapted), and its Br halved where it was."""
    paper_q = gpusim.paper_blocks("flash2", cfg.gpu, cfg.head_dim, cfg.dtype)[0]
    halved = "" if cfg.block_q == paper_q else f", B<sub>r</sub> halved from {paper_q} until both algorithms run"
    return (f"gpusim's FlashAttention-2 rule (Algorithm 1's, adapted to the Q blocks outer) for the {cfg.gpu.name}'s "
            f"{fmt_bytes(cfg.gpu.sram_bytes_per_block)} of SRAM{halved}")


def traffic(seq, head_dim, gpu, dtype="fp16"):
    """{algo: Result} of standard attention and FlashAttention-2 for one head, both at traffic_tile."""
    block_q, block_kv = traffic_tile(gpu, head_dim, dtype)
    return {algo: gpusim.simulate(algo, seq=seq, head_dim=head_dim, gpu=gpu, dtype=dtype, block_q=block_q,
                                  block_kv=block_kv) for algo in TRAFFIC_ALGOS}


def moved(result, tensor):
    """The bytes a Result reads and writes of one tensor (0 for one it never moves)."""
    t = result.by_tensor.get(tensor, {})
    return t.get("read_bytes", 0) + t.get("write_bytes", 0)


def sp_share(result):
    """S and P's share of a naive Result's bytes."""
    return (moved(result, "S") + moved(result, "P")) / result.hbm_bytes
