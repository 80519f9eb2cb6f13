"""the chapters' exercises (gpusim_course.<chapter>.exercises): each reference solution is right, a stub is "not
yet", and each likely mistake gets its reason. The answers are checked against gpusim on cases in every dtype the
exercise names."""
import numpy as np
import pytest

import gpusim
from gpusim_course.hierarchy import exercises as hierarchy_exercises
from gpusim_course.softmax import exercises as softmax_exercises
from gpusim_course.standard import exercises as standard_exercises
from gpusim_course.tiling import exercises as tiling_exercises

MODULES = {name: m for m in (hierarchy_exercises, standard_exercises, softmax_exercises, tiling_exercises)
           for name in m.EXERCISES}  # each exercise's chapter


@pytest.mark.parametrize("name", list(MODULES))
def test_each_solution_is_right_and_each_stub_is_not_yet(name):
    verdict = MODULES[name].check(name, MODULES[name].EXERCISES[name][1])
    assert verdict.status == "right" and bool(verdict)

    def stub(*args):
        return None

    assert MODULES[name].check(name, stub).status == "not yet"

    def unwritten(*args):
        raise NotImplementedError

    assert "NotImplementedError" in MODULES[name].check(name, unwritten).message


def unscaled_l(m_i, l_i, acc, s_ij, v_j):
    """A tile update that forgets to rescale l_i when the max grows."""
    m_new, _, acc_new = softmax_exercises.tile_update(m_i, l_i, acc, s_ij, v_j)
    return m_new, l_i + np.exp(s_ij - m_new[:, None]).sum(axis=1), acc_new


@pytest.mark.parametrize("name, wrong, hint", [
    ("ridge_point", lambda g, d: g.hbm_bytes_per_s / g.matmul_flops_per_s(d), "bytes per FLOP"),
    ("ridge_point", lambda g, d: g.fp32_flops_per_s / g.hbm_bytes_per_s, "tensor-core rate"),
    # every GPU and every dtype it prices, as notebook 1 says: the check tried fp16 and fp32 only, and passed this
    ("ridge_point", lambda g, d: g.matmul_flops_per_s("fp16" if d == "bf16" else d) / g.hbm_bytes_per_s,
     "H200-measured's bf16 is not fp16's"),
    ("naive_sp_bytes", lambda n, e: 2 * n * n * e, "counted each matrix once"),
    ("naive_sp_bytes", lambda n, e: 4 * n * n, "multiply by itemsize"),
    ("naive_sp_bytes", lambda n, e: 3 * n * n * e, "Count four N × N transfers"),
    ("naive_sp_bytes", lambda n, e: 4 * n * n * 2, "2 bytes an element, but itemsize is 1 here"),  # fp16 kept
    ("flash2_k_read_bytes", lambda n, d, br, e: (n // br) * n * d * e, "use ceil"),
    ("flash2_k_read_bytes", lambda n, d, br, e: n * d * e, "That is K once"),
    # both of the first uneven cases round up (1000 / 128 = 7.8, 300 / 16 = 18.75): round() passed them
    ("flash2_k_read_bytes", lambda n, d, br, e: round(n / br) * n * d * e,
     "N = 1040 is not a multiple of Br = 128 here: the last Q block holds only 16 rows"),
    ("causal_kept", lambda n, nk, a: tiling_exercises.causal_kept(n, nk, "bottom_right"),
     "That is the bottom-right count"),
    ("causal_kept", lambda n, nk, a: tiling_exercises.causal_kept(n, nk, "top_left"), "That is the top-left count"),
    ("causal_kept", lambda n, nk, a: n * (n - 1) // 2, "the diagonal included"),
    ("tile_update", unscaled_l, "without rescaling"),
    ("tile_update", lambda m, l, acc, s, v: (m, l), "returned a tuple of 2: return the tuple (m_new, l_new, acc_new)"),
    ("tile_update", lambda m, l, acc, s, v: (m, l, "acc"), "returned acc_new = 'acc': return numbers"),
    ("tile_update", lambda m, l, acc, s, v: (m, l, [[1, 2], [3]]), "returned acc_new = [[1, 2], [3]]"),
    ("tile_update", lambda *a: (lambda m, l, acc: (m, l, acc / l[:, None]))(*softmax_exercises.tile_update(*a)),
     "acc_new is already divided by l_new"),
    ("ridge_point", lambda g, d: g.matmul_flops_per_s(d) / (g.hbm_bytes_per_s / 1e9), "a rate in GB/s?"),
    ("causal_kept", lambda n, nk, a: 1 / 0, "ZeroDivisionError"),
])
def test_a_wrong_answer_gets_the_reason(name, wrong, hint):
    verdict = MODULES[name].check(name, wrong)
    assert verdict.status == "wrong" and hint in verdict.message and not verdict
    assert "wrong" in verdict._repr_html_() and str(verdict).startswith(f"{name}: wrong. ")


@pytest.mark.parametrize("fn", [200.6, None, "ridge_point"])
def test_a_value_in_place_of_the_function_is_not_yet(fn):
    verdict = hierarchy_exercises.check("ridge_point", fn)
    assert verdict.status == "not yet" and "check takes your function itself, ridge_point" in verdict.message


def test_a_partial_and_a_list_are_answers_like_any_other():
    import functools
    ridge = functools.partial(lambda g, d, k: k * g.matmul_flops_per_s(d) / g.hbm_bytes_per_s, k=1)
    assert hierarchy_exercises.check("ridge_point", ridge)
    assert softmax_exercises.check("tile_update", lambda *a: list(softmax_exercises.tile_update(*a)))


def test_naive_sp_bytes_is_checked_in_each_dtype_by_its_name():
    """The cases name their dtype (bf16 is a 2-byte dtype of its own, not fp16) and pass its width."""
    seen = []

    def spy(seq, itemsize):
        seen.append((seq, itemsize))
        return standard_exercises.naive_sp_bytes(seq, itemsize)

    assert standard_exercises.check("naive_sp_bytes", spy)
    assert seen == [(3008, 1), (4096, 4), (128, 2), (1008, 2)]  # fp8, fp32, fp16, bf16
    # S written and read, P written and read: four N x N transfers in bf16
    bf16 = gpusim.simulate("naive", seq=1008, head_dim=64, dtype="bf16", gpu="H100-SXM").by_tensor
    assert sum(bf16[t][k] for t in "SP" for k in ("read_bytes", "write_bytes")) == 4 * 1008 * 1008 * 2
    # at N = 1000 the rows are padded to 1008 columns (kernels/naive.py): the cases keep N a multiple of 16
    bf16 = gpusim.simulate("naive", seq=1000, head_dim=64, dtype="bf16", gpu="H100-SXM").by_tensor
    assert sum(bf16[t][k] for t in "SP" for k in ("read_bytes", "write_bytes")) == 4 * 1000 * 1008 * 2


def test_solutions_give_the_hand_computed_answers():
    assert tiling_exercises.causal_kept(4, 4, "top_left") == 10
    assert tiling_exercises.causal_kept(9, 5, "top_left") == 15 + 4 * 5
    assert tiling_exercises.causal_kept(5, 9, "bottom_right") == 5 + 6 + 7 + 8 + 9  # the last row sees all 9 keys
    assert tiling_exercises.flash2_k_read_bytes(1000, 64, 128, 2) == 8 * 1000 * 64 * 2  # ceil(1000 / 128) = 8 Q blocks
    assert standard_exercises.naive_sp_bytes(128, 4) == 4 * 128 * 128 * 4
    a100 = gpusim.get_gpu("A100-40GB")
    assert hierarchy_exercises.ridge_point(a100, "fp16") == pytest.approx(312e12 / 1.555e12)


def in_place_tile_update(m_i, l_i, acc, s_ij, v_j):
    """A correct tile update that rescales l_i and acc in place, as a kernel does in registers."""
    m_new = np.maximum(m_i, s_ij.max(axis=1))
    alpha, p = np.exp(m_i - m_new), np.exp(s_ij - m_new[:, None])
    l_i *= alpha
    l_i += p.sum(axis=1)
    acc *= alpha[:, None]
    acc += p @ v_j
    m_i[:] = m_new
    return m_i, l_i, acc


def test_an_answer_that_updates_its_arguments_in_place_is_right():
    """The checker computed the expected acc from the acc the answer had already rescaled, and marked this wrong
    ("the old acc needs the same rescale"): the answer gets copies now."""
    verdict = softmax_exercises.check("tile_update", in_place_tile_update)
    assert verdict.status == "right", verdict.message


def test_tile_update_solution_matches_softmax_attention_on_one_block():
    """After one K/V block from a fresh state, acc / l is softmax(s) @ v."""
    rng = np.random.default_rng(0)
    s, v = rng.standard_normal((4, 8)), rng.standard_normal((8, 3))
    m, l, acc = softmax_exercises.tile_update(np.full(4, -np.inf), np.zeros(4), np.zeros((4, 3)), s, v)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    assert np.allclose(acc / l[:, None], p / p.sum(axis=1, keepdims=True) @ v, rtol=1e-12)
    assert np.array_equal(m, s.max(axis=1))


def test_a_correct_answer_in_either_alignment_is_right():
    """The exercise names the alignment: a bottom-right answer to a bottom-right case is right, and the check
    asks for both (the old check took only top-left and marked a correct bottom-right count wrong)."""
    def closed_form(n, nk, align):
        shift = nk - n if align == "bottom_right" else 0
        ramp = min(n, nk - shift)  # rows that see fewer than nk keys
        return ramp * (ramp + 1) // 2 + shift * ramp + (n - ramp) * nk

    assert tiling_exercises.check("causal_kept", closed_form).status == "right"
    assert {c[2] for c in tiling_exercises.KEPT_CASES} == {"top_left", "bottom_right"}


def test_solution_prints_the_reference(capsys):
    tiling_exercises.solution("causal_kept")
    assert "def causal_kept" in capsys.readouterr().out


def float32_tile_update(m_i, l_i, acc, s_ij, v_j):
    """The reference update computed in float32, as a GPU accumulates it: acc is a few 1e-7 relative off float64."""
    return softmax_exercises.tile_update(*(np.asarray(x, dtype=np.float32) for x in (m_i, l_i, acc, s_ij, v_j)))


def test_a_tile_update_computed_in_float32_is_right():
    """The acc check used np.allclose's atol=1e-8 and said "the old acc needs the same rescale" to this."""
    verdict = softmax_exercises.check("tile_update", float32_tile_update)
    assert verdict.status == "right", verdict.message
    nudged = softmax_exercises.check("tile_update", lambda *a: (*softmax_exercises.tile_update(*a)[:2],
                                                                softmax_exercises.tile_update(*a)[2] * (1 + 2.3e-7)))
    assert nudged.status == "right", nudged.message


def no_acc_rescale(m_i, l_i, acc, s_ij, v_j):
    m_new, l_new, _ = softmax_exercises.tile_update(m_i, l_i, acc, s_ij, v_j)
    return m_new, l_new, acc + np.exp(s_ij - m_new[:, None]) @ v_j


def tile_max_only(m_i, l_i, acc, s_ij, v_j):
    """m_new from the tile alone: the old max forgotten."""
    m_new = s_ij.max(axis=1)
    alpha, p = np.exp(m_i - m_new), np.exp(s_ij - m_new[:, None])
    return m_new, alpha * l_i + p.sum(axis=1), alpha[:, None] * acc + p @ v_j


@pytest.mark.parametrize("wrong, hint", [
    (no_acc_rescale, "acc_new is off: the old acc needs the same rescale"),
    (lambda *a: (*softmax_exercises.tile_update(*a)[:2], softmax_exercises.tile_update(*a)[2] * (1 + 1e-3)),
     "acc_new is off"),
    (tile_max_only, "m_new differs from gpusim's m_i"),
    # a shape, not a value: the check said "m_new differs from gpusim's m_i" to m_new of shape (Br, 1)
    (lambda *a: (softmax_exercises.tile_update(*a)[0][:, None], *softmax_exercises.tile_update(*a)[1:]),
     "At K/V block j = 0, m_new has shape (16, 1): it should be (16,), like m_i (one value per query row)."),
    (lambda *a: (softmax_exercises.tile_update(*a)[0], softmax_exercises.tile_update(*a)[1][:, None],
                 softmax_exercises.tile_update(*a)[2]), "l_new has shape (16, 1): it should be (16,), like l_i"),
], ids=["acc not rescaled", "acc 1e-3 off", "tile max only", "m_new of shape (Br, 1)", "l_new of shape (Br, 1)"])
def test_a_wrong_tile_update_is_still_refused_with_its_hint(wrong, hint):
    verdict = softmax_exercises.check("tile_update", wrong)
    assert verdict.status == "wrong" and hint in verdict.message, verdict.message


def test_a_ridge_point_computed_in_float32_is_right():
    """rel_tol=1e-9 marked np.float32's 6e-8 rounding wrong, with the generic hint."""
    def float32(gpu, dtype):
        return np.float32(gpu.matmul_flops_per_s(dtype)) / np.float32(gpu.hbm_bytes_per_s)

    assert hierarchy_exercises.check("ridge_point", float32).status == "right"
    off = hierarchy_exercises.check("ridge_point", lambda g, d: hierarchy_exercises.ridge_point(g, d) * (1 + 1e-5))
    assert off.status == "wrong" and "peak FLOP/s of the dtype over the HBM bandwidth" in off.message
