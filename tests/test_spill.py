"""Spills: the compiled kernels' local-memory traffic, read off their disassembly (benchmarks/resources.py), is
an entry of each kernel's bytes beside its tensors (KernelResult.spill_read_bytes / spill_write_bytes,
Result.spills), never a tensor's: the kernels' own loads still equal trace_io's."""
import json
from pathlib import Path

import pytest

import gpusim
from gpusim.compiled import COMPILED

ROOT = Path(__file__).resolve().parents[1]
ROWS = [r for r in json.loads((ROOT / "results" / "sm90_resources.json").read_text())["rows"] if "error" not in r]
H200 = "H200-measured"
# Bytes per thread of a local access by its suffix (PTX ISA: ld.local / st.local of .b32, .b64, .v4.b32)
WORD, DOUBLE, QUAD = 4, 8, 16

# An nvdisasm listing in its own spelling (lines as it prints them for flash1): an outer loop (.L_x_1) holding
# an inner one (.L_x_2), with loads and stores of each width, and a last-use reload (LDL.LU) before the end
SNIPPET = """
        /*0000*/                   STL [R1+0x4c], R9 ;
.L_x_1:
        /*0010*/                   LDL.64 R152, [R1+0x30] ;
        /*0020*/                   STL.128 [R1+0x10], R4 ;
.L_x_2:
        /*0030*/                   LDL R10, [R1+0x4c] ;
        /*0040*/                   MUFU.EX2 R3, R3 ;
        /*0050*/                   HGMMA.64x64x16.F32 R24, gdesc[UR4], R24 ;
        /*0060*/              @!P0 BRA `(.L_x_2) ;
        /*0070*/              @!P1 BRA `(.L_x_1) ;
        /*0080*/                   LDL.LU R18, [R1+0x44] ;
        /*0090*/                   EXIT ;
"""


@pytest.fixture
def resources():
    """benchmarks/resources.py, which needs Triton (Linux wheels only)."""
    return pytest.importorskip("benchmarks.resources", reason="benchmarks/resources.py needs Triton")


def test_the_disassembly_gives_each_loops_local_bytes_per_iteration(resources):
    figures = resources.loops_of(*resources.sass_ops(SNIPPET))
    inner = [3, 1, 1, WORD, 0]  # LDL, MUFU, BRA (HGMMA not counted)
    outer = [inner[0] + 3, 1, 2, WORD + DOUBLE, QUAD]  # + LDL.64, STL.128, its own BRA
    whole = [outer[0] + 3, 1, 3, WORD + DOUBLE + WORD, WORD + QUAD]  # + STL, LDL.LU, EXIT
    assert figures == {"loops": [outer, inner], "issued": whole}


@pytest.mark.parametrize("opcode, width", [("LDL", WORD), ("LDL.LU", WORD), ("LDL.64", DOUBLE), ("STL.128", QUAD),
                                           ("LDL.LU.64", DOUBLE), ("LDG.E.128", 0), ("STS.64", 0)])
def test_a_local_access_moves_its_width(resources, opcode, width):
    assert resources.local_bytes(opcode) == width


def test_the_disassemblys_local_bytes_are_what_ptxas_reports_as_spills():
    """Two readings of one compile: ptxas -v's spill stores and loads (per thread, static) are the bytes of the
    disassembly's STL and LDL over the whole kernel."""
    assert ROWS and all((r["issued"][3], r["issued"][4]) == (r["spill_load_bytes"], r["spill_store_bytes"])
                        for r in ROWS)


def flash1_walk(cfg, res):
    """kernels/flash1.py's loops walked one iteration at a time (its loop bounds, not gpusim's tiling): per
    program, T_r initialising iterations, the K/V loop over the blocks the last Q block sees, and inside it the
    Q blocks from the first that sees block j; each iteration's own bytes (the K/V loop's less the Q loop's),
    and the code outside the loops once, every thread of the block."""
    n, br, bc = cfg.seq, cfg.block_q, cfg.block_kv
    tr = -(-n // br)
    kv_blocks = min((n - 1) // bc + 1, -(-n // bc)) if cfg.causal else -(-n // bc)
    init, outer, inner = ([res.loops[i][k] for k in (3, 4)] for i in range(3))
    own = [o - i for o, i in zip(outer, inner)]
    outside = [res.issued[k] - init[j] - outer[j] for j, k in enumerate((3, 4))]
    total = [0, 0]
    for j in range(kv_blocks):
        first = (j * bc) // br if cfg.causal else 0  # the first Q block whose last row sees key j * Bc
        for k in (0, 1):
            total[k] += own[k] + (tr - first) * inner[k]
    return [cfg.bh * res.threads * (t + tr * i + o) for t, i, o in zip(total, init, outside)]


@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("seq", [1024, 4000])
def test_flash1_spills_what_its_loops_walked_one_by_one_spill(head_dim, seq):
    from gpusim.occupancy import resources as compiled_resources
    r = gpusim.simulate("flash1", seq=seq, head_dim=head_dim, heads=4, batch=2, causal=True, gpu=H200)
    k = r.kernels[0]
    res = compiled_resources(r.config, "flash1")
    assert res.compiled and k.spill_read_bytes > 0
    assert [k.spill_read_bytes, k.spill_write_bytes] == flash1_walk(r.config, res)


def test_spills_are_the_kernels_bytes_and_no_tensors():
    r = gpusim.simulate("flash1", seq=2048, head_dim=64, heads=8, causal=True, gpu=H200)
    k = r.kernels[0]
    tensors = [sum(rw[i] for rw in r.counts.values()) for i in (0, 1)]
    assert r.spills == {"flash1": (k.spill_read_bytes, k.spill_write_bytes)}
    assert (k.read_bytes, k.write_bytes) == (tensors[0] + k.spill_read_bytes, tensors[1] + k.spill_write_bytes)
    assert [sum(e[key] for e in r.by_tensor.values()) for key in ("read_bytes", "write_bytes")] == tensors
    assert (r.hbm_read_bytes, r.hbm_write_bytes) == tuple(tensors)
    assert (k.dram_read_bytes, k.dram_write_bytes) == tuple(sum(rw[i] for rw in r.dram.values()) for i in (0, 1))


def test_nothing_compiled_spills_nothing():
    r = gpusim.simulate("flash1", seq=2048, head_dim=64, heads=8, causal=True, gpu="A100-40GB")
    assert r.spills == {} and (r.kernels[0].spill_read_bytes, r.kernels[0].spill_write_bytes) == (0, 0)


@pytest.mark.parametrize("causal", [False, True])
def test_flash2s_loops_split_the_steps_at_the_unmasked_blocks(causal):
    """flash2's spilling compiles at their launch rule: the first loop runs each Q block's unmasked K/V blocks
    (counted here one Q block at a time), the last the rest, the code outside them once per program."""
    from gpusim.occupancy import resources as compiled_resources
    checked = 0
    for key in sorted({k for k in COMPILED if k[1] == "flash2" and k[4] == causal}, key=str):
        r = gpusim.simulate("flash2", seq=3000, head_dim=key[2], heads=2, dtype=key[3], causal=causal,
                            block_q=key[5], block_kv=key[6], gpu=H200)
        t, res = r.config.tiling, compiled_resources(r.config, "flash2")
        unmasked = sum(t.unmasked_blocks_of(i) for i in range(t.n_q_blocks))
        per_head = [unmasked * res.loops[0][k] + (t.tiles - unmasked) * res.loops[1][k]
                    + t.n_q_blocks * (res.issued[k] - res.loops[0][k] - res.loops[1][k]) for k in (3, 4)]
        k = r.kernels[0]
        assert [k.spill_read_bytes, k.spill_write_bytes] == [r.config.bh * res.threads * b for b in per_head]
        checked += k.spill_read_bytes > 0
    assert checked
