"""The decode notebook's data (gpusim_course.inference.model): each function against gpusim and numbers by hand."""
import pytest

from gpusim_course.inference import model as course
from gpusim_course.inference import plots as decode_plots


def test_kv_calculator_by_hand():
    c = course.kv_calculator("Llama-3-8B", context_tokens=8192, batch=10, dtype="fp16", gpu="H200")
    assert c["bytes per token"] == 131_072
    assert c["bytes per request"] == 8192 * 131_072 == 1 << 30
    assert c["KV cache bytes"] == 10 << 30
    assert c["fits"] and c["largest batch"] == 124
    assert not course.kv_calculator("Llama-3-70B", context_tokens=8192, batch=4, gpu="H200")["fits"]


def test_split_kv_steps_follow_the_schedule():
    """300 keys in chunks of 64 (5 chunks) over 3 splits of 2, 2 and 1 chunks; pages of 16."""
    steps = course.split_kv_steps(seq_kv=300, num_splits=3, block_kv=64, page_size=16)
    chunks = [(s["split"], s["chunk"], s["keys"], s["pages"]) for s in steps
              if s["kernel"] == "split_kv" and s["chunk"] is not None]
    assert chunks == [(0, 0, (0, 64), (0, 1, 2, 3)), (0, 1, (64, 128), (4, 5, 6, 7)),
                      (1, 2, (128, 192), (8, 9, 10, 11)), (1, 3, (192, 256), (12, 13, 14, 15)),
                      (2, 4, (256, 300), (16, 17, 18))]
    last = chunks[-1]
    assert steps[[s["chunk"] for s in steps].index(4)]["loads"]["K"] == (last[2][1] - last[2][0]) * 16 * 2
    merges = [s for s in steps if s["kernel"] == "reduce"]
    assert [s["program"] for s in merges] == [(0, h, 0) for h in range(4)]  # one per query row
    assert all(len(s["weights"]) == 3 and max(s["weights"]) == 1.0 for s in merges)  # exp(LSE_s - max LSE)
    assert all(s["loads"] == {"cache_seqlens": 4, "LSE_partial": 3 * 4, "O_partial": 3 * 16 * 4} for s in merges)


def test_allocation_compares_both_allocators_on_the_same_memory():
    servings = course.allocation(steps=60, slots=4, max_tokens=1024)
    contiguous, paged = servings["contiguous"], servings["paged"]
    assert contiguous.budget_bytes == paged.budget_bytes == 4 * 1024 * 131_072
    assert len(contiguous.memory_map.owner) == 4 and len(paged.memory_map.owner) == 4 * 1024 // 16
    assert paged.peak_running > contiguous.peak_running <= 4
    assert paged.wasted_fraction < contiguous.wasted_fraction


@pytest.mark.parametrize("policy", ["contiguous", "paged"])
def test_memory_map_image(policy):
    """One cell per 16 tokens: the owner's color where tokens are cached, faded where reserved and empty."""
    serving = course.allocation(steps=40, slots=2, max_tokens=512)[policy]
    image = decode_plots.memory_map_image(serving, cell_tokens=16, ncols=32)
    mm = serving.memory_map
    assert image.shape == (2 * 512 // 16 // 32, 32, 4)
    cells = image.reshape(-1, 4)
    held = sum(-(-used // 16) for used in mm.used_tokens) if policy == "contiguous" else \
        sum(used == 16 for used in mm.used_tokens)
    assert (cells[:, 3] == 1.0).sum() - (cells == decode_plots.FREE).all(axis=1).sum() == held
    reserved = sum(1 for owner in mm.owner if owner >= 0) * (512 // 16 if policy == "contiguous" else 1)
    assert (cells[:, 3] == decode_plots.RESERVED_ALPHA).sum() == reserved - held


def test_allocation_until_is_a_prefix_of_the_whole_run():
    whole = course.allocation(steps=80, slots=4, max_tokens=1024)
    part = course.allocation(steps=80, slots=4, max_tokens=1024, until=30)
    for policy in whole:
        assert part[policy].snapshots == whole[policy].snapshots[:30]


def test_waste_claim_rows_grow_with_the_reserved_length():
    rows = course.waste_claim_rows(users=10, max_tokens=(512, 2048), steps=120)
    assert [r["max_tokens"] for r in rows] == [512, 2048]
    small, big = rows
    assert small["contiguous wasted share"] < big["contiguous wasted share"]  # longer slots, more empty room
    assert all(r["paged wasted share"] < 0.1 < r["contiguous wasted share"] for r in rows)
    assert all(r["contiguous peak running"] <= 10 < r["paged peak running"] for r in rows)
    assert "10 requests" in course.waste_claim_sentence(rows, users=10)
