"""gpusim_course.puzzles: the kernels the learner writes. The reference solutions pass both checks (output and
bytes); wrong answers, made as a learner would make them (the solution with one mistake: a mutant), each get
the verdict that names their mistake, within 30 s, from the child process that runs them: the test process
(the notebook's kernel) stays alive, even where the mistake would crash Triton's interpreter. The child runs
the kernels in Triton's interpreter whether or not a GPU is there."""
import ast
import importlib.util
import inspect
import os
import time

import numpy as np
import pytest

pytest.importorskip("triton", reason="no triton: the kernels extra (Linux only; make omits it without a CPU torch)")
from gpusim_course import puzzles  # noqa: E402
from gpusim_course.puzzles import solutions as puzzle_solutions  # noqa: E402
from gpusim_course.puzzles.sandbox import TIMEOUT_S  # noqa: E402

# make test's processes: one runs them all, so one checker process serves them (its start imports torch and triton),
# but for those these tests stop on purpose.
pytestmark = pytest.mark.xdist_group("puzzles")

Q_LOAD = ("    q_i = tl.load(Q + bh * N * D + rows[:, None] * D + cols[None, :], mask=rows[:, None] < N, other=0.0)"
          "  # read Br*d\n")
KEYS = "        keys = j * Bc + tl.arange(0, Bc)\n"
P_T = "p_t = tl.where((keys[:, None] < N) & (rows[None, :] < N), tl.exp(s_t - lse_i[None, :]), 0.0)"
P_IJ = "p_ij = tl.where(keys[None, :] < N, tl.exp(s_ij - lse_i[:, None]), 0.0)"
ACTIVE = "active = s < tl.cdiv(n_chunks, tl.cdiv(n_chunks, SPLITS))"
VERDICT_S = 30


def learner(name):
    """The reference solution's functions (kernel, launcher or None), as the checks receive a learner's."""
    if puzzles.PUZZLES[name].launcher:
        return getattr(puzzle_solutions, f"{name}_kernel"), getattr(puzzle_solutions, name)
    return getattr(puzzle_solutions, name), None


def mutant(tmp_path, name, old, new):
    """The reference solution of `name` with `old` replaced by `new`, as a learner's kernel (and launcher) in a
    file of its own."""
    source = puzzles.solution_source(name)
    assert old in source, old
    path = tmp_path / f"mutant_{name}.py"
    path.write_text("import torch\nimport triton\nimport triton.language as tl\n\n\n" + source.replace(old, new, 1))
    return mutant_from(path, name)


def mutant_from(path, name):
    """The learner's functions of puzzle `name` defined in the file `path`."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel, launcher = learner(name)
    return getattr(module, kernel.fn.__name__), launcher and getattr(module, launcher.__name__)


def timed_check(name, kernel, launcher=None, **kw):
    """The verdict, checked to come back within VERDICT_S with this process alive and its pid unchanged."""
    pid, start = os.getpid(), time.perf_counter()
    verdict = puzzles.check(name, kernel, launcher, **kw)
    assert time.perf_counter() - start < VERDICT_S and os.getpid() == pid
    return verdict


@pytest.mark.parametrize("name", list(puzzles.PUZZLES))
def test_the_reference_solution_passes_both_checks(name):
    verdict = timed_check(name, *learner(name))
    assert verdict.status == "right", verdict.message
    assert "to the byte" in verdict.message


@pytest.mark.parametrize("name", list(puzzles.PUZZLES))
def test_a_template_with_blanks_is_not_yet(tmp_path, name):
    kernel, launcher = mutant(tmp_path, name, "tl.program_id(0)", "...")
    verdict = puzzles.check(name, kernel, launcher)
    assert verdict.status == "not yet" and "1 blank(s)" in verdict.message


WRONG = [  # (puzzle, mistake, replaced, replacement, the check that sees it, what the verdict names)
    ("online_softmax", "acc not rescaled", "acc = acc * alpha[:, None] + tl.dot", "acc = acc + tl.dot",
     "Correctness", ["Q block 0 (rows 0..15) is wrong", "tile (i, j) = (0, 1)", "multiply them by alpha"]),
    ("online_softmax", "l_i not rescaled", "l_i = alpha * l_i + tl.sum", "l_i = l_i + tl.sum",
     "Correctness", ["Q block 0 (rows 0..15) is wrong", "tile (i, j) = (0, 1)"]),
    # each tile's own max in place of the running one: right in exact arithmetic, but exp(m_i - m_new) overflows where
    # a later tile scores far below an earlier one (head 0 of request 0 of the inputs; the later rows of a row puzzle)
    ("online_softmax", "max of the tile alone", "m_new = tl.maximum(m_i, tl.max(s_ij, 1))", "m_new = tl.max(s_ij, 1)",
     "Correctness", ["is wrong", "NaN"]),
    ("flash2_forward", "max of the tile alone", "m_new = tl.maximum(m_i, tl.max(s_ij, 1))",
     "m_new = tl.max(s_ij, 1)", "Correctness", ["is wrong", "NaN"]),
    ("causal_skip", "max of the tile alone", "m_new = tl.maximum(m_i, tl.max(s_ij, 1))", "m_new = tl.max(s_ij, 1)",
     "Correctness", ["is wrong", "NaN"]),
    ("online_row_softmax", "max of the chunk alone", "m_new = tl.maximum(m_i, tl.max(x, 0))", "m_new = tl.max(x, 0)",
     "Correctness", ["is nan", "keep the running max"]),
    ("online_softmax", "rescale sign flipped", "alpha = tl.exp(m_i - m_new)", "alpha = tl.exp(m_new - m_i)",
     "Correctness", ["rescale runs the wrong way", "exp(m_i - m_new) is at most 1"]),
    ("online_softmax", "Q_i reloaded every step", KEYS, KEYS + Q_LOAD.replace("    q_i", "        q_i"),
     "Bytes", ["Q block 0 (rows 0..15)", "Q 5,120 B (gpusim: 1,024 B)", "Q_i is loaded once"]),  # 1 + 4 loads
    ("causal_skip", "every K/V block visited", "n_blocks = tl.minimum(last_row // Bc + 1, tl.cdiv(N_KV, Bc))",
     "n_blocks = tl.cdiv(N_KV, Bc)", "Bytes", ["Q block 0 (rows 0..31)", "K 6 tiles (gpusim: 2)",
                                                "entirely right of the diagonal"]),
    ("causal_skip", "diagonal blocks unmasked", "if j >= n_whole:", "if j >= n_blocks:",
     "Correctness", ["Q block 0 (rows 0..31) is wrong", "tile (i, j) = (0, 0)", "masked"]),
    ("causal_skip", "every block masked", "n_whole = tl.minimum(i * Br // Bc, N_KV // Bc)", "n_whole = 0",
     "Masks", ["Q block 1 (rows 32..63) masks K/V block 0", "4 of its steps", "n_whole = i * Br // Bc"]),
    ("causal_skip", "diagonal blocks not visited", "n_blocks = tl.minimum(last_row // Bc + 1",
     "n_blocks = tl.minimum(i * Br // Bc", "Correctness", ["Q block 0 (rows 0..31) is wrong", "NaN"]),
    # right at N = 96, Br = 32, Bc = 16, where Bc divides Br; at Br = 16, Bc = 32, Q block 0 visits no block at all
    ("causal_skip", "block count rounded down", "n_blocks = tl.minimum(last_row // Bc + 1, tl.cdiv(N_KV, Bc))",
     "n_blocks = (i + 1) * Br // Bc", "At N = 88, Br = 16, Bc = 32 (right at N = 96, Br = 32, Bc = 16): Correctness",
     ["Q block 0 (rows 0..15) is wrong", "NaN", "last_row // Bc", "(i + 1) * Br // Bc is 0 for Q block 0"]),
    ("gqa_decode", "interleaved heads", "heads = kv_head * GROUP + tl.arange(0, BLOCK_R)",
     "heads = kv_head + H_KV * tl.arange(0, BLOCK_R)", "Offsets",
     ["program 0 (request 0, K/V head 0: query heads 0..3) read rows of head 4 of Q", "h // GROUP"]),
    ("gqa_decode", "cache stride of the request's length, not the cache's", "kv = (pid * S + keys)[:, None] * D",
     "kv = (pid * n_keys + keys)[:, None] * D", "Offsets",
     ["program 2 (request 1", "read rows of batch 0 of K", "start at pid * S"]),
    ("gqa_decode", "l_i not rescaled", "l_i = alpha * l_i + tl.sum(p, 1)", "l_i = l_i + tl.sum(p, 1)", "Correctness",
     ["program 0 (request 0, K/V head 0: query heads 0..3) is wrong", "K/V block 1 of program 0", "rescale l_i"]),
    ("gqa_decode", "V loaded twice", "tl.dot(p.to(v_j.dtype), v_j)",
     "tl.dot(p.to(v_j.dtype), tl.load(V + kv, mask=keys[:, None] < n_keys, other=0.0))", "Bytes",
     ["program 0", "V 10 tiles (gpusim: 5)", "load K_j, V_j once"]),
    ("gqa_decode", "padding rows loaded", "q = tl.load(Q + q_rows, mask=in_group[:, None], other=0.0)",
     "q = tl.load(Q + q_rows, mask=(heads < H)[:, None], other=0.0)", "Offsets",
     ["program 0 (request 0, K/V head 0: query heads 0..3) read rows of head 4 of Q besides its own", "mask"]),
    # the mistakes that crashed the interpreter or misled: each named where it happens
    ("gqa_decode", "padding mask left out (crashed the kernel)",
     "q = tl.load(Q + q_rows, mask=in_group[:, None], other=0.0)", "q = tl.load(Q + q_rows)", "program (1)",
     ["load from Q at element offset 256, past its 256 elements", "mask=in_group"]),
    ("gqa_decode", "one padding row in the group", "in_group = tl.arange(0, BLOCK_R) < GROUP",
     "in_group = tl.arange(0, BLOCK_R) <= GROUP", "program (3)",
     ["load from Q at element offset 256, past its 256 elements", "in_group = tl.arange(0, BLOCK_R) < GROUP"]),
    ("gqa_decode", "batch offset left out", "q_rows = (b * H + heads)[:, None]", "q_rows = heads[:, None]",
     "Offsets", ["program 2 (request 1", "read rows of batch 0 of Q", "check the batch offset"]),
    ("flash2_forward", "K load unmasked", "k_j = tl.load(K + kv, mask=keys[:, None] < N_KV, other=0.0)",
     "k_j = tl.load(K + kv)", "program (0, 3)",
     ["load from K at element offset 3,584, past its 3,584 elements: mask the lanes past the end", "keys[:, None] < N_KV"]),
    ("flash2_forward", "O store unmasked",
     "(acc / l_i[:, None]).to(O.dtype.element_ty),\n             mask=rows[:, None] < N)",
     "(acc / l_i[:, None]).to(O.dtype.element_ty))", "program (2, 3)",
     ["store to O at element offset 2,560, past its 2,560 elements"]),
    ("flash2_forward", "batch offset left out", "q_head = b * H * N * D + h * N * D", "q_head = h * N * D",
     "Offsets", ["program (0, 2) (b=1, h=0) read rows of batch 0 of Q", "check the batch offset"]),
    # head 1's K starts N rows (not N_KV) in: inside head 0, so it reads its own head, but not all of it
    ("flash2_forward", "K/V offsets by N, not N_KV", "kv_head = b * H * N_KV * D + h * N_KV * D",
     "kv_head = b * H * N * D + h * N * D", "Offsets",
     ["program (0, 1) (b=0, h=1) read rows of head 0 of K, where it should touch only head 1", "check the head offset",
      "h * N_KV * d in K and V"]),
    # N = 40 query rows, N_KV = 56 keys: a bound of N in place of N_KV is right where the two agree, and is named so
    # (the verdict blamed the rescale, at tile (0, 2), code the learner never touched)
    ("flash2_forward", "keys masked with N", "k_j = tl.load(K + kv, mask=keys[:, None] < N_KV",
     "k_j = tl.load(K + kv, mask=keys[:, None] < N", "Correctness",
     ["Q block 0 (rows 0..15) is wrong", "right where K and V hold only N = 40 keys", "takes N, Q's rows, for N_KV"]),
    ("flash2_forward", "scores masked with N", "s_ij = tl.where(keys[None, :] < N_KV",
     "s_ij = tl.where(keys[None, :] < N", "Correctness", ["right where K and V hold only N = 40 keys"]),
    ("flash2_forward", "loop bound of N", "for j in range(0, tl.cdiv(N_KV, Bc))", "for j in range(0, tl.cdiv(N, Bc))",
     "Correctness", ["right where K and V hold only N = 40 keys", "tl.cdiv(N_KV, Bc)"]),
    ("flash2_forward", "head offset wrong", "q_head = b * H * N * D + h * N * D", "q_head = b * H * N * D + h * D",
     "Offsets", ["program (0, 1) (b=0, h=1) read rows of head 0 of Q", "check the head offset", "not h * d"]),
    ("masked_tile", "output of the wrong dtype", "y = torch.empty_like(x)",
     "y = torch.empty_like(x, dtype=torch.float32)",
     "Output", ["Y is float32 of shape (40, 50); the result is float16 of shape (40, 50)"]),
    ("masked_tile", "output of the wrong shape", "y = torch.empty_like(x)", "y = x.new_empty(x.shape[0], x.shape[0])",
     "Output", ["Y is float16 of shape (40, 40); the result is float16 of shape (40, 50)"]),
    ("masked_tile", "load unmasked", "tile = tl.load(X + offs, mask=inside)", "tile = tl.load(X + offs)",
     "program (2, 0)", ["load from X at element offset 2,000, past its 2,000 elements", "columns >= N"]),
    ("gpu_merge", "half the rows never launched", "gpu_merge_kernel[(lse1.numel(),)]",
     "gpu_merge_kernel[(lse1.numel() // 2,)]", "Stores", ["768 of O's 1,536 elements are never stored"]),
    # O is weighted by exp(LSE_g - LSE): with the log term left out of the LSE, O is wrong too, but the LSE is named
    ("gpu_merge", "LSE as the max alone", "lse = m + tl.log(tl.exp(lse1 - m) + tl.exp(lse2 - m))", "lse = m",
     "Correctness", ["LSE[0, 0, 0] is 90.26 where float64 gives 90.27", "LSE = m + log(exp(LSE1 - m)"]),
    ("gpu_merge", "LSE merged without the max", "lse = m + tl.log(tl.exp(lse1 - m) + tl.exp(lse2 - m))",
     "lse = tl.log(tl.exp(lse1) + tl.exp(lse2))", "Correctness", ["where float64 gives", "exp of a raw LSE overflows"]),
    ("row_softmax", "no max subtracted", "p = tl.exp(x - tl.max(x, 0))", "p = tl.exp(x)",
     "Correctness", ["where float64 gives", "stored it", "exp overflows"]),
    ("online_row_softmax", "running sum not rescaled", "l_i = l_i * tl.exp(m_i - m_new) + ", "l_i = l_i + ",
     "Correctness", ["Y[0,", "l_i * exp(m_i - m_new)"]),
    ("dot_tile", "k blocks cut short", "for k in range(0, tl.cdiv(K, BLOCK)):", "for k in range(0, K // BLOCK):",
     "Correctness", ["Y[", "Sum tl.dot(a, b) over every k block"]),
    ("flash2_forward", "K loaded twice", "s_ij = tl.where(keys[None, :] < N_KV, tl.dot(q_i, tl.trans(k_j))",
     "s_ij = tl.where(keys[None, :] < N_KV, tl.dot(q_i, tl.trans(tl.load(K + kv, mask=keys[:, None] < N_KV)))",
     "Bytes", ["Q block 0 (rows 0..15)", "K 7 tiles (gpusim: 3.5)"]),
    ("dkdv", "dK not scaled by tau", "(dk * scale).to(dK.dtype.element_ty)", "dk.to(dK.dtype.element_ty)",
     "Correctness", ["dK[0, 0, 0", "dK_j = τ Σ_i dS_ijᵀ Q_i"]),
    ("dq", "Q reloaded every step", "        kv = head + keys[:, None] * HEAD_DIM + cols[None, :]\n",
     "        kv = head + keys[:, None] * HEAD_DIM + cols[None, :]\n"
     "        q_i = tl.load(Q + qo, mask=rows[:, None] < N, other=0.0)\n",
     "Bytes", ["Q 20,480 B read (expected 5,120)", "loaded once, before the loop"]),
    # N = 40, not a multiple of the 16-row tiles: a mask on the wrong axes drops real rows of the last blocks (with
    # N = 48 it masked nothing and passed). No mask at all is right: the padding rows load as 0 and add nothing.
    ("dkdv", "Pᵀ's mask on the wrong axes", P_T, P_T.replace("(keys[:, None] < N) & (rows[None, :] < N)",
                                                          "(keys[None, :] < N) & (rows[:, None] < N)"),
     "Correctness", ["dK[0, 0, 8, 0] is", "program (0, 0) (b=0, h=0)", "the keys run down its rows"]),
    ("dq", "P's mask on the wrong axis", P_IJ, P_IJ.replace("keys[None, :] < N", "keys[:, None] < N"),
     "Correctness", ["dQ[0, 0, 8, 0] is", "the keys run along its columns"]),
    ("dkdv", "Q load unmasked", "q_i = tl.load(Q + qo, mask=rows[:, None] < N, other=0.0)",
     "q_i = tl.load(Q + qo)", "program (0, 3)", ["load from Q at element offset 2,560, past its 2,560 elements"]),
    ("split_kv_merge", "empty splits read", ", mask=active[:, None], other=0.0)", ")",
     "Bytes", ["O_partial 1,536 B read (expected 1,024)", "splits past its last chunk"]),
    # one chunk a split: the right output, the 144 keys' empty fourth split read; the hint says how chunks are dealt
    ("split_kv_merge", "a split taken for one chunk", ACTIVE, "active = s < n_chunks", "Bytes",
     ["the output is right", "O_partial 1,152 B read (expected 1,024)", "takes cdiv(n_chunks, SPLITS) chunks"]),
    # the requests fill 4, 3 and 1 splits: a count that is not the request's own misses a split of the first
    ("split_kv_merge", "a constant count of splits", ACTIVE, "active = s < SPLITS - 1", "Correctness",
     ["program (0, 0) (h=0, b=0: 112 keys)", "fewer splits than this request fills", "not as a constant"]),
    # head 0's LSEs near 90 and head 1's near -90: a fixed max that keeps one finite sends the other to 0 / 0
    ("split_kv_merge", "a constant in place of the largest LSE", "m = tl.max(lse_s, 0)",
     "m = tl.max(lse_s, 0) * 0.0 + 80.0", "Correctness", ["is nan", "program (1, 0) (h=1, b=0: 112 keys)",
                                                          "subtract the largest LSE_s"]),
    ("paged_decode", "cache order instead of the block table", "page = tl.load(block_table + b * max_pages + j)",
     "page = b * max_pages + j + 0 * tl.load(block_table + b * max_pages + j)", "Correctness",
     ["program 0 (request 0", "block table's order"]),
]


@pytest.mark.parametrize("name, mistake, old, new, which, names", WRONG, ids=[w[1] for w in WRONG])
def test_a_wrong_kernel_gets_the_verdict_that_names_its_mistake(tmp_path, name, mistake, old, new, which, names):
    verdict = timed_check(name, *mutant(tmp_path, name, old, new))
    assert verdict.status == "wrong" and verdict.message.startswith(which), verdict.message
    for text in names:
        assert text in verdict.message, (text, verdict.message)
    assert verdict.message.count("\n") <= 1 and "Traceback" not in verdict.message


@pytest.mark.parametrize("count", ["1", "2", "3", "SPLITS - 1", "SPLITS"])
def test_a_constant_count_of_splits_is_wrong(tmp_path, count):
    """Each request's own count of active splits, never a constant: the requests fill 1, 3 and 4 of the 4 splits
    (with 80 and 40 keys both filled 3, and `active = s < 3` passed). Too few splits for a request: a wrong output;
    too many: its empty splits read."""
    verdict = timed_check("split_kv_merge", *mutant(tmp_path, "split_kv_merge", ACTIVE, f"active = s < {count}"))
    assert verdict.status == "wrong", verdict.message
    assert verdict.message.startswith("Bytes" if count == "SPLITS" else "Correctness"), verdict.message
    p = puzzles.PUZZLES["split_kv_merge"]
    assert sorted(int(a) for a in p.launch().active_splits) == [1, 3, p.splits]


def test_the_backward_puzzles_have_a_ragged_last_tile():
    """A mask is checked only where a tile is partial: N = 48 in 16-row tiles had none, and a mask on the wrong
    axes passed."""
    for name in ("dkdv", "dq"):
        p = puzzles.PUZZLES[name]
        assert p.seq % p.block_q and p.seq % p.block_kv, (name, p.seq)


def test_a_merge_in_base_2_is_right(tmp_path):
    """Fast kernels merge LSEs with exp2 and log2 (scaled by log2(e) and back): fp32 rounds that near 130, a few
    ulps of an LSE near 90 off, and the check takes it (it once held the LSE to 1e-5, about one ulp there)."""
    base2 = ("lse = (m * 1.4426950408889634 + tl.log2(tl.exp2((lse1 - m) * 1.4426950408889634) + "
             "tl.exp2((lse2 - m) * 1.4426950408889634))) * 0.6931471805599453")
    kernel, launcher = mutant(tmp_path, "gpu_merge", "lse = m + tl.log(tl.exp(lse1 - m) + tl.exp(lse2 - m))", base2)
    verdict = timed_check("gpu_merge", kernel, launcher)
    assert verdict.status == "right", verdict.message


def test_a_missing_batch_offset_does_not_blame_the_head_mapping(tmp_path):
    verdict = timed_check("gqa_decode", *mutant(tmp_path, "gqa_decode", "q_rows = (b * H + heads)[:, None]",
                                                 "q_rows = heads[:, None]"))
    assert "batch" in verdict.message and "h // GROUP" not in verdict.message and "head offset" not in verdict.message


def test_a_loop_that_never_ends_is_stopped_by_its_loads_and_stores(tmp_path):
    kernel, _ = mutant(tmp_path, "online_softmax", "    for j in range(0, tl.cdiv(N_KV, Bc)):\n",
                       "    j = 0\n    while j < tl.cdiv(N_KV, Bc):\n")
    verdict = timed_check("online_softmax", kernel)
    assert verdict.status == "wrong" and verdict.message.startswith("the loop never ends: check your loop bounds")
    assert "range(0, tl.cdiv(N_KV, Bc))" in verdict.message and "Program (0, 0) was still running" in verdict.message


def test_a_loop_that_never_ends_without_memory_accesses_is_stopped_by_the_clock(tmp_path):
    assert TIMEOUT_S <= 25  # with the child's start, a verdict within 30 s
    kernel, _ = mutant(tmp_path, "online_softmax", "    m_i = tl.full([Br], float(\"-inf\"), tl.float32)\n",
                       "    while N_KV > 0:\n        N_KV = N_KV + 0\n    m_i = tl.full([Br], float(\"-inf\"), tl.float32)\n")
    verdict = timed_check("online_softmax", kernel, timeout_s=3)
    assert verdict.status == "wrong" and verdict.message.startswith("the loop never ends: check your loop bounds")
    assert "Program (0, 0) was still running after 3 s; loads and stores so far: 1." in verdict.message
    assert timed_check("online_softmax", *learner("online_softmax")).status == "right"  # a fresh child


def test_a_crash_of_the_checkers_process_is_a_verdict_and_the_next_check_runs(tmp_path):
    """What the interpreter did on an unmasked pointer before the guard (abort, exit code 134), done on purpose."""
    kernel, launcher = mutant(tmp_path, "masked_tile", "    y = torch.empty_like(x)",
                              "    __import__('os')._exit(134)\n    y = torch.empty_like(x)")
    verdict = timed_check("masked_tile", kernel, launcher)
    assert verdict.status == "wrong" and "crashed the checker's process (exit code 134)" in verdict.message
    assert timed_check("masked_tile", *learner("masked_tile")).status == "right"


def test_a_kernel_that_calls_helpers_of_its_own_is_checked_with_them(tmp_path):
    helper = ("@triton.jit\ndef rescale(x, m_i, m_new):\n    return x * tl.exp(m_i - m_new)\n\n\n"
              "@triton.jit\ndef online_softmax(")
    mutant(tmp_path, "online_softmax", "@triton.jit\ndef online_softmax(", helper)
    path = tmp_path / "mutant_online_softmax.py"
    text = path.read_text()
    assert "l_i = alpha * l_i + tl.sum" in text
    path.write_text(text.replace("l_i = alpha * l_i + tl.sum", "l_i = rescale(l_i, m_i, m_new) + tl.sum"))
    kernel, _ = mutant_from(path, "online_softmax")
    assert timed_check("online_softmax", kernel).status == "right"


def test_a_launcher_takes_its_notebooks_imports_and_constants_to_the_checker(tmp_path):
    """A module the launcher names (`import math` in another cell; numpy as np, a lambda's grid), a module's
    function (`from math import floor`), a plain
    constant (BLOCK = 16), one as a default argument (block=BLK) and a tl.constexpr the kernel reads reach the
    checker's process; a global that shares a name with an attribute (x.shape) or cannot be written back (a NumPy
    scalar, an int of 5,000 digits) stays behind; a name left behind is said to be the checker's, not the
    kernel's, fault."""
    grid = ("    BLOCK_ROWS = BLOCK\n    grid = lambda meta: (math.ceil(x.shape[0] / BLOCK), "
            "int(np.ceil(x.shape[1] / BLOCK_ROWS)) + 0 * floor(1.5))\n")
    mutant(tmp_path, "masked_tile", "    grid = (triton.cdiv(x.shape[0], block), triton.cdiv(x.shape[1], block))\n",
           grid)
    path = tmp_path / "mutant_masked_tile.py"
    text = path.read_text().replace("def masked_tile(x, block=16):", "def masked_tile(x, block=BLK):")
    text = text.replace("    tile = tl.load(X + offs, mask=inside)", "    tile = tl.load(X + offs * ONE, mask=inside)")
    text = text.replace("import triton.language as tl\n", "import triton.language as tl\nimport math\n"
                        "from math import floor\n"
                        "import numpy as np\nBLOCK = 16\nBLK = 16\nONE = tl.constexpr(1)\nLIMIT = np.float64(1.0)\n"
                        "shape = np.float64(2.0)\nHUGE = 10 ** 5000\n", 1)
    path.write_text(text)
    assert timed_check("masked_tile", *mutant_from(path, "masked_tile")).status == "right"
    for name in ("LIMIT", "HUGE"):
        path.write_text(text.replace("    y = torch.empty_like(x)", f"    y = torch.empty_like(x) + 0 * {name}"))
        verdict = timed_check("masked_tile", *mutant_from(path, "masked_tile"))
        assert verdict.status == "wrong" and f"name '{name}' is not defined" in verdict.message
        assert "with torch, triton, tl and what they name from your notebook" in verdict.message


def test_a_name_the_kernel_alone_reads_is_said_to_be_left_behind(tmp_path):
    """The interpreter raises a kernel's NameError wrapped (InterpreterError): the verdict still says what the
    checker sends."""
    kernel, launcher = mutant(tmp_path, "masked_tile", "    tile = tl.load(X + offs, mask=inside)",
                              "    tile = tl.load(X + offs * SOMEWHERE, mask=inside)")
    verdict = timed_check("masked_tile", kernel, launcher)
    assert verdict.status == "wrong" and "SOMEWHERE" in verdict.message and "what they name" in verdict.message


@pytest.mark.parametrize("kernel", [lambda: 0, 3.0, print])
def test_what_is_not_a_function_of_the_learners_own_is_not_yet(kernel):
    verdict = timed_check("online_softmax", kernel)
    assert verdict.status == "not yet" and "define each with def (not lambda)" in verdict.message


def test_a_module_of_the_learners_own_beside_the_notebook_reaches_the_checker(tmp_path, monkeypatch):
    """`import helpers` in a notebook whose folder holds helpers.py: Jupyter's sys.path has '' (the current folder)
    for it, which the child, run isolated, does not; the parent sends that folder's path in its place."""
    import sys

    from gpusim_course.puzzles import checker, sandbox
    (tmp_path / "helpers_of_mine.py").write_text("def blocks(n, block):\n    return (n + block - 1) // block\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    grid = "    grid = (triton.cdiv(x.shape[0], block), triton.cdiv(x.shape[1], block))\n"
    mutant(tmp_path, "masked_tile", grid, grid.replace("triton.cdiv", "helpers_of_mine.blocks"))
    path = tmp_path / "mutant_masked_tile.py"
    path.write_text("import helpers_of_mine\n" + path.read_text())
    child = sandbox.Child()
    try:
        status, message = child.ask("checker.check_here", "masked_tile",
                                    checker.sources("masked_tile", *mutant_from(path, "masked_tile")))
    finally:
        child.stop()
    assert status == "right", message


def test_the_attention_puzzles_reject_mistakes_of_both_kinds():
    kinds = {name: {w[4] for w in WRONG if w[0] == name} for name in puzzles.PUZZLES}
    assert all({"Correctness", "Bytes"} <= kinds[name] for name in ("online_softmax", "causal_skip", "gqa_decode"))
    assert len(puzzles.PUZZLES) >= 12 and all(kinds[name] for name in puzzles.PUZZLES)


def test_solution_prints_the_hidden_reference(capsys):
    puzzles.solution("gqa_decode")
    printed = capsys.readouterr().out
    assert printed.startswith("@triton.jit\ndef gqa_decode(")
    assert printed == puzzles.solution_source("gqa_decode") + "\n"
    puzzles.solution("masked_tile")
    assert "def masked_tile_kernel(" in capsys.readouterr().out


def test_blanks_counts_the_ellipses_outside_the_docstring(tmp_path):
    assert puzzles.blanks(puzzle_solutions.online_softmax) == 0
    two, _ = mutant(tmp_path, "online_softmax", "alpha = tl.exp(m_i - m_new)", "alpha = ...\n        beta = ...")
    assert puzzles.blanks(two) == 2


def test_show_accesses_draws_the_learners_loads_beside_gpusims_schedule(tmp_path):
    """The reference solution's picture equals gpusim's schedule, panel by panel; a kernel that visits every
    K/V block loads rows that gpusim's causal schedule skips."""
    import matplotlib
    matplotlib.use("Agg")

    def panels(fig):
        images = [ax.images[0].get_array() for ax in fig.axes if ax.images]
        return images[:3], images[3:]  # yours (Q, K, V), gpusim's
    mine, gpusim = panels(puzzles.show_accesses("causal_skip", puzzle_solutions.causal_skip))
    assert len(mine) == 3 and all(np.array_equal(a.filled(-1), b.filled(-1)) for a, b in zip(mine, gpusim))
    kernel, _ = mutant(tmp_path, "causal_skip", "n_blocks = tl.minimum(last_row // Bc + 1, tl.cdiv(N_KV, Bc))",
                       "n_blocks = tl.cdiv(N_KV, Bc)")
    mine, gpusim = panels(puzzles.show_accesses("causal_skip", kernel))
    assert np.isfinite(mine[1].filled(np.nan)).sum() > np.isfinite(gpusim[1].filled(np.nan)).sum()


def test_every_load_and_store_of_the_solutions_states_its_traffic():
    """Each statement with a tl.load or tl.store ends in a traffic comment: `# read ...` or `# write ...`."""
    source = inspect.getsource(puzzle_solutions)
    lines = source.splitlines()
    statements = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.stmt)
                  and not isinstance(node, (ast.For, ast.If, ast.While, ast.FunctionDef))
                  and any(isinstance(c, ast.Attribute) and c.attr in ("load", "store") for c in ast.walk(node))]
    silent = [lines[s.end_lineno - 1] for s in statements
              if not any(w in lines[s.end_lineno - 1] for w in ("# read", "# write"))]
    assert len(statements) > 40 and not silent, silent


def test_a_checker_process_that_cannot_start_says_why_in_one_line(monkeypatch):
    """A child that exits before it is ready (here its first line exits with code 3): one line naming its exit, not
    a bare EOFError."""
    from gpusim_course.puzzles import sandbox
    monkeypatch.setattr(sandbox, "BOOT", "import sys; sys.exit(3)")
    child = sandbox.Child()
    with pytest.raises(RuntimeError, match=r"exited with code 3 before it started \(its error is above\)"):
        child._start()
    assert child.process is None


def test_a_learner_file_named_like_a_module_does_not_hide_it_from_the_checker(tmp_path, monkeypatch):
    """enum.py and numpy.py beside the notebook, first on the notebook's path: the child still starts (the standard
    library's enum and the installed numpy come first on its path) and answers a check."""
    import sys

    from gpusim_course.puzzles import sandbox
    for name in ("enum", "numpy"):
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('a learner file named {name}.py')\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    from gpusim_course.puzzles import checker
    name = "masked_tile"
    child = sandbox.Child()
    try:
        status, message = child.ask("checker.check_here", name, checker.sources(name, *learner(name)))
    finally:
        child.stop()
    assert status == "right", message


def test_a_merge_puzzle_refuses_a_batch_its_lengths_contradict():
    """The reduce has one request per length: a batch given beside them was replaced silently."""
    from gpusim_course.puzzles.kinds import MergePuzzle
    assert MergePuzzle("m", lengths=(16, 32)).batch == 2 and MergePuzzle("m", gpus=2).batch == 2
    with pytest.raises(ValueError, match=r"^batch=5: this merge has 2 requests, one per length of \(16, 32\)$"):
        MergePuzzle("m", lengths=(16, 32), batch=5)
