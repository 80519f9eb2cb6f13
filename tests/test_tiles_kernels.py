"""gpusim.Tiles, one launch's knobs shared by the model and the kernels: every entry point launches the tiles,
num_warps and num_stages (the Hopper kernel: all its knobs) that gpusim prices for it, cfg.pass_.tiles(cfg,
kernel); tiles=Tiles(...) and block_q=, block_kv= launch the same; a bad Tiles is refused in one line. In
Triton's interpreter, on tiny shapes."""
import pytest

pytest.importorskip("triton", reason="no triton: the kernels extra (Linux only; make omits it without a CPU torch)")
import torch

import gpusim
import gpusim_kernels
from gpusim import backward as training
from gpusim.config import make_config, pass_of
from gpusim.occupancy import resources
from gpusim_kernels import backward, flash1, flash2, hopper, naive, naive_backward
from gpusim_kernels.interpreter import INTERPRETED
from gpusim_kernels.launch import CPU_GPU

pytestmark = pytest.mark.skipif(not INTERPRETED, reason="CPU tensors need Triton's interpreter: TRITON_INTERPRET=1")
Tiles = gpusim.Tiles
SHAPE = dict(batch=1, heads=2, kv_heads=1, seq=40, seq_kv=40, head_dim=16)  # ragged: 40 rows in 16- and 32-row tiles
KNOBS = Tiles(16, 32, num_warps=2, num_stages=1)
FORWARDS = {"flash2": gpusim_kernels.flash2_attention, "flash1": gpusim_kernels.flash1_attention,
            "naive": gpusim_kernels.naive_attention}
MODULES = {"flash2": flash2, "flash1": flash1, "naive": naive, "flash2_bwd": backward, "naive_bwd": naive_backward}


def qkv(shape=SHAPE, dtype=torch.float16):
    gen = torch.Generator().manual_seed(0)
    b, h, h_kv, n, n_kv, d = shape.values()
    return [torch.randn(s, generator=gen).to(dtype) for s in ((b, h, n, d), (b, h_kv, n_kv, d), (b, h_kv, n_kv, d))]


def recorded(monkeypatch, module, name="launch"):
    """{kernel name as gpusim calls it: the keywords it was launched with}, filled as module launches."""
    launches, original = {}, getattr(module, name)

    def record(kernel, grid, *args, **kwargs):
        launches[kernel.fn.__name__.removesuffix("_kernel")] = kwargs
        return original(kernel, grid, *args, **kwargs)
    monkeypatch.setattr(module, name, record)
    return launches


def assert_launched(launches, cfg):
    """Each launch's tiles and options are gpusim's Tiles for that kernel of cfg."""
    assert set(launches) == set(cfg.kernels)
    for kernel, kwargs in launches.items():
        tiles = cfg.pass_.tiles(cfg, kernel)
        assert (kwargs["num_warps"], kwargs["num_stages"]) == (tiles.num_warps, tiles.num_stages), kernel
        assert kwargs["Br"] == tiles.block_q and kwargs.get("Bc", tiles.block_kv) == tiles.block_kv, kernel


@pytest.mark.parametrize("tiles", [Tiles(16, 32), KNOBS], ids=["rule", "knobs"])
@pytest.mark.parametrize("algo", FORWARDS)
def test_forward_launches_what_gpusim_prices(monkeypatch, algo, tiles):
    launches = recorded(monkeypatch, MODULES[algo])
    FORWARDS[algo](*qkv(), causal=True, tiles=tiles)
    assert_launched(launches, make_config(algo, **SHAPE, causal=True, tiles=tiles, gpu=CPU_GPU))


@pytest.mark.parametrize("tiles", [Tiles(16, 32), KNOBS], ids=["rule", "knobs"])
@pytest.mark.parametrize("algo", ["flash2", "naive"])
def test_backward_launches_what_gpusim_prices(monkeypatch, algo, tiles):
    q, k, v = qkv()
    do = torch.randn_like(q)
    if algo == "flash2":
        o, lse = gpusim_kernels.flash2_attention(q, k, v, causal=True, tiles=tiles, return_lse=True)
        launches = recorded(monkeypatch, backward)
        gpusim_kernels.flash2_attention_backward(q, k, v, o, lse, do, causal=True, tiles=tiles)
    else:
        o, p = gpusim_kernels.naive_attention(q, k, v, causal=True, tiles=tiles, return_p=True)
        launches = recorded(monkeypatch, naive_backward)
        gpusim_kernels.naive_attention_backward(q, k, v, p, do, causal=True, tiles=tiles)
    assert_launched(launches, training.config(algo, **SHAPE, causal=True, tiles=tiles, gpu=CPU_GPU))


HOPPER_SHAPE = dict(SHAPE, head_dim=64)


@pytest.mark.parametrize("tiles", [None, Tiles(128, 128, num_warps=8, num_stages=3, warp_specialize=False,
                                                mask="branch", overlap=False, lpt_heads=1)], ids=["table", "knobs"])
def test_hopper_launches_what_gpusim_prices(monkeypatch, tiles):
    """The table's launch (d = 64, fp16, causal), and a caller's whole Tiles: every knob as priced. (A Tiles
    that leaves knobs None the kernel resolves, against its table and the warp specializer's limits, and
    gives gpusim whole.)"""
    launches = recorded(monkeypatch, hopper, "launch_kernel")
    gpusim_kernels.hopper_attention(*qkv(HOPPER_SHAPE), causal=True, tiles=tiles)
    blocks = pass_of("hopper").kernel_blocks(64, "fp16", True)
    cfg = make_config("hopper", **HOPPER_SHAPE, causal=True, gpu="H200",
                      **dict(tiles=tiles) if tiles else dict(block_q=blocks[0], block_kv=blocks[1]))
    priced, (kwargs,) = cfg.tiles, launches.values()
    assert (kwargs["Br"], kwargs["Bc"], kwargs["num_warps"], kwargs["STAGES"]) == (*priced.blocks, priced.num_warps,
                                                                                   priced.num_stages)
    assert (kwargs["WARP_SPECIALIZE"], kwargs["MASK"], kwargs["OVERLAP"]) == (priced.warp_specialize, priced.mask,
                                                                              priced.overlap)


def calls(algo, tiles):
    """algo's entry point on fixed inputs, given tiles either way: as tiles=, or as its keywords."""
    q, k, v = qkv(HOPPER_SHAPE if algo == "hopper" else SHAPE)
    given = dict(tiles=tiles) if tiles else {}
    if algo == "hopper":
        return gpusim_kernels.hopper_attention, (q, k, v), dict(causal=True, **given)
    return FORWARDS[algo], (q, k, v), dict(causal=True, **given)


@pytest.mark.parametrize("algo, tiles, keywords", [
    ("flash2", KNOBS, None), ("flash1", Tiles(16, 16), dict(block_q=16, block_kv=16)),
    ("naive", Tiles(32, 16), dict(block_q=32, block_kv=16)),
    ("hopper", Tiles(64, 64, num_warps=4, mask="branch"), dict(block_q=64, block_kv=64, num_warps=4, mask="branch")),
])
def test_tiles_and_keywords_launch_the_same(algo, tiles, keywords):
    """Outputs bit for bit, and every byte trace_io counts. flash2's knobs: against the rule's launch, which
    moves the same bytes."""
    fn, args, given = calls(algo, tiles)
    keywords = keywords or dict(block_q=tiles.block_q, block_kv=tiles.block_kv)
    by_keywords = dict(given, tiles=None, **keywords)
    assert torch.equal(fn(*args, **given), fn(*args, **by_keywords))
    assert gpusim_kernels.trace_io(fn, *args, **given) == gpusim_kernels.trace_io(fn, *args, **by_keywords)


@pytest.mark.parametrize("make, message", [
    (lambda: Tiles(64, 64, num_warps=3), "num_warps=3 must be a power of two >= 1"),
    (lambda: Tiles(64, 0), "block_kv=0 must be a positive integer"),
    (lambda: Tiles(64, 64, mask="diagonal"), "mask='diagonal' is not one of every, branch, split"),
    (lambda: Tiles(64, 64, overlap=1), "overlap=1 must be True or False"),
    (lambda: gpusim_kernels.flash2_attention(*qkv(), tiles=Tiles(48, 16)),
     "block_q=48 must be a power of two >= 16 (a tl.dot tile)"),
    (lambda: gpusim_kernels.naive_attention(*qkv(), tiles=Tiles(16, 16), block_kv=32),
     "tiles=Tiles(16, 16, ...) and block_q=None, block_kv=32 were both given: give one of them"),
    (lambda: gpusim_kernels.flash1_attention(*qkv(), tiles=Tiles(16, 16, mask="every")),
     "mask='every': the flash1 kernel takes num_warps, num_stages, not mask"),
    (lambda: gpusim_kernels.flash2_attention_trainable(*qkv(), tiles=Tiles(16, 16, warp_specialize=True)),
     "warp_specialize=True: the flash2 kernel takes num_warps, num_stages, not warp_specialize"),  # was dropped
    (lambda: gpusim_kernels.flash2_attention(*qkv(), tiles=(16, 16)), "tiles=(16, 16) must be a gpusim.Tiles"),
    (lambda: gpusim_kernels.hopper_attention(*qkv(HOPPER_SHAPE), tiles=Tiles(64, 64), num_warps=8),
     "tiles=Tiles(64, 64, ...) and num_warps=8 were both given: give one of them"),
    (lambda: gpusim_kernels.hopper_attention(*qkv(HOPPER_SHAPE), tiles=Tiles(64, 64, num_warps=2)),
     "num_warps=2 must be 4, 8 or 16 (whole warp groups of 4 warps)"),
])
def test_a_bad_tiles_is_refused_in_one_line(make, message):
    with pytest.raises(ValueError) as error:
        make()
    assert str(error.value) == message


def test_the_model_prices_a_callers_knobs():
    """make_config(tiles=...): the occupancy model takes the caller's num_warps and num_stages; the golden
    configurations (no tiles given) keep the rule's."""
    cfg = make_config("flash2", seq=4096, head_dim=64, tiles=Tiles(128, 64, num_warps=4, num_stages=2))
    rule = make_config("flash2", seq=4096, head_dim=64, block_q=128, block_kv=64)
    assert (resources(cfg, "flash2").num_warps, resources(cfg, "flash2").num_stages) == (4, 2)
    assert (resources(rule, "flash2").num_warps, rule.user_tiles) == (8, None)
    assert make_config("flash2", seq=4096, head_dim=64, tiles=Tiles(128, 64)) == rule


def test_custom_op_takes_tiles_fields():
    """Under torch.compile the Tiles reaches gpusim::flash2_attention as its fields, and launches the same."""
    q, k, v = qkv()
    fn = lambda q, k, v: gpusim_kernels.flash2_attention(q, k, v, causal=True, tiles=KNOBS)  # noqa: E731
    torch._dynamo.reset()
    assert torch.equal(torch.compile(fn, fullgraph=True, backend="eager")(q, k, v), fn(q, k, v))


def test_knobs_names_every_launch_option_but_the_tiles():
    """Tiles.knobs lists each of the dataclass's fields past block_q and block_kv that is set, so a knob added to Tiles
    cannot be left out of what the model prices and the kernels launch."""
    from dataclasses import fields
    every = gpusim.Tiles(64, 64, num_warps=4, num_stages=2, warp_specialize=True, mask="branch", overlap=False,
                         lpt_heads=2)
    assert list(every.knobs) == [f.name for f in fields(gpusim.Tiles)][2:]
    assert gpusim.Tiles(64, 64, num_stages=3).knobs == {"num_stages": 3}
