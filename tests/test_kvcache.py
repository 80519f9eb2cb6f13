"""KV-cache memory (gpusim.kvcache) against numbers worked out by hand, and the serving simulation on
scenarios small enough to follow step by step."""
import pytest

from gpusim import kvcache as kv
from gpusim.kvcache import Request

H200_HBM = 150_109_880_320  # gpusim's H200 preset (what torch can allocate on the lent H200)


def test_bytes_per_token_by_hand():
    assert kv.bytes_per_token("Llama-3-8B", "fp16") == 2 * 32 * 8 * 128 * 2 == 131_072
    assert kv.bytes_per_token("Llama-3-70B", "fp16") == 2 * 80 * 8 * 128 * 2 == 327_680
    assert kv.bytes_per_token("Llama-3-8B", "fp8") == 65_536


def test_parameters_by_hand():
    # embeddings in and out, 32 layers of q, o (4096²), k, v (4096 x 1024), MLP (3 x 4096 x 14336), 2 norms
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert kv.MODELS["Llama-3-8B"].params == 2 * 128256 * 4096 + 32 * layer + 4096 == 8_030_261_248
    assert kv.MODELS["Llama-3-8B"].weight_bytes == 16_060_522_496  # bf16
    assert kv.MODELS["Llama-3-70B"].params == 70_553_706_496


def test_llama_31_presets_are_llama_3s_shapes_with_a_128k_context():
    """Notebook 8 moves the context to 128K: Llama-3's configs stop at 8,192 tokens, Llama-3.1's (the same layers
    and heads, config.json's max_position_embeddings 131072) take it; Llama-3's numbers stay as they were."""
    for size in ("8B", "70B"):
        old, new = kv.MODELS[f"Llama-3-{size}"], kv.MODELS[f"Llama-3.1-{size}"]
        assert (old.max_tokens, new.max_tokens) == (8192, 131072)
        shape = ("layers", "heads", "kv_heads", "head_dim", "hidden", "intermediate", "vocab", "weight_dtype")
        assert [getattr(new, k) for k in shape] == [getattr(old, k) for k in shape]
    assert [(m.layers, m.heads, m.kv_heads, m.head_dim) for m in map(kv.get_model, ("Llama-3.1-8B", "Llama-3.1-70B"))] \
        == [(32, 32, 8, 128), (80, 64, 8, 128)]
    assert kv.MODELS["Llama-3.1-70B"].params == kv.MODELS["Llama-3-70B"].params == 70_553_706_496


def test_how_many_requests_fit_by_hand():
    budget = H200_HBM - 16_060_522_496
    assert kv.kv_budget_bytes("Llama-3-8B", "H200") == budget == 134_049_357_824
    assert kv.max_batch("Llama-3-8B", "H200", 8192) == budget // (8192 * 131_072) == 124
    assert kv.max_batch("Llama-3-70B", "H200", 8192) == (H200_HBM - 141_107_412_992) // (8192 * 327_680) == 3
    assert kv.max_batch("Llama-3-70B", "A100-40GB", 1024) == 0  # the weights alone do not fit


def requests(*lengths):
    return tuple(Request(i, 0, p, o) for i, (p, o) in enumerate(lengths))


def test_paged_serving_step_by_step():
    """Two requests of a 5-token prompt and 3 output tokens, pages of 4 tokens: after step 0 each holds 6
    tokens in 2 pages (16 reserved, 12 used); after step 1, 7 tokens; at step 2 both finish."""
    r = kv.serve("Llama-3-8B", requests((5, 3), (5, 3)), steps=3, policy="paged", page_size=4, max_tokens=16,
                 budget_bytes=10 * 4 * 131_072)
    t = 131_072
    assert [(s.running, s.used_bytes, s.reserved_bytes) for s in r.snapshots] == [
        (2, 12 * t, 16 * t), (2, 14 * t, 16 * t), (0, 0, 0)]
    assert r.finished == 2 and r.preemptions == 0
    assert r.wasted_fraction == (4 + 2) / (16 + 16)


def test_contiguous_serving_reserves_the_longest_request():
    r = kv.serve("Llama-3-8B", requests((5, 3), (5, 3), (5, 3)), steps=1, policy="contiguous", max_tokens=16,
                 budget_bytes=2 * 16 * 131_072)
    s = r.snapshots[0]
    assert (s.running, s.waiting, s.used_bytes, s.reserved_bytes) == (2, 1, 12 * 131_072, 32 * 131_072)
    assert r.memory_map == kv.MemoryMap(16, (0, 1), (6, 6))


def test_preemption_by_hand():
    """3 pages of 4 tokens, two requests of prompt 3 and output 3. Step 0: each takes a page (room for
    4 tokens) and grows to 4. Step 1: request 0 takes the last page; request 1 needs one, none is free,
    so it (the latest admitted) is preempted. Step 2: request 0 finishes. Step 3: request 1 comes back
    with its 4 tokens recomputed into 2 pages, and grows to 5."""
    r = kv.serve("Llama-3-8B", requests((3, 3), (3, 3)), steps=4, policy="paged", page_size=4, max_tokens=8,
                 budget_bytes=3 * 4 * 131_072)
    t = 131_072
    assert [(s.running, s.waiting, s.used_bytes // t, s.reserved_bytes // t) for s in r.snapshots] == [
        (2, 0, 8, 8), (1, 1, 5, 8), (0, 1, 0, 0), (1, 0, 5, 8)]
    assert r.preemptions == 1 and r.finished == 1
    assert r.memory_map == kv.MemoryMap(4, (1, 1, -1), (4, 1, 0))


def test_arrivals_are_seeded_and_bounded():
    a, b = kv.arrivals(200, 3, 512, seed=7), kv.arrivals(200, 3, 512, seed=7)
    assert a == b and a != kv.arrivals(200, 3, 512, seed=8)
    assert all(r.prompt_tokens >= 1 and r.output_tokens >= 1 and r.prompt_tokens + r.output_tokens <= 512 for r in a)


def test_paging_wastes_less_and_fits_more_than_contiguous():
    """The source's claim: reserving the maximum context for each of many chat requests wastes most of the
    memory ("70%"). With ShareGPT-like lengths and Llama-3's 8,192-token context it is more than that."""
    reqs = kv.arrivals(300, 2, 8192, seed=0)
    budget = 64 * 8192 * 131_072  # 64 contiguous slots
    contiguous = kv.serve("Llama-3-8B", reqs, steps=300, policy="contiguous", budget_bytes=budget)
    paged = kv.serve("Llama-3-8B", reqs, steps=300, policy="paged", page_size=16, budget_bytes=budget)
    assert contiguous.wasted_fraction > 0.7
    assert paged.wasted_fraction < 0.05
    assert paged.peak_running > 5 * contiguous.peak_running


@pytest.mark.parametrize("kwargs, message", [
    (dict(policy="buddy"), "policy='buddy' is not one of contiguous, paged"),
    (dict(page_size=0), "page_size=0 must be a positive number of tokens per page"),
    (dict(max_tokens=6), "request 0 has 5 + 3 tokens: each part must be >= 1 and the sum <= max_tokens=6"),
    (dict(dtype="int4"), "dtype='int4' is not supported"),
    (dict(gpu="T4", model="Llama-3-70B"), "Llama-3-70B's weights (141,107,412,992 B) do not fit in T4's HBM "
                                          "(17,179,869,184 B)"),  # was a negative budget and nothing served
    (dict(budget_bytes=-1), "budget_bytes=-1 must be a non-negative integer"),
    (dict(budget_bytes=4 * 131_072, page_size=4), "a KV cache of 524,288 B holds 1 page of 4 tokens at 131,072 B "
     "a token; the longest request (8 tokens) needs 2 pages and would never finish: a budget of at least 1,048,576 B"),
    (dict(budget_bytes=16 * 131_072 - 1, policy="contiguous"), "holds 0 slots of 16 tokens at 131,072 B a token; the "
     "longest request (8 tokens) needs 1 slot and would never finish: give max_tokens at most 15, or a larger budget"),
    (dict(budget_bytes=7 * 131_072, policy="contiguous"), "needs 1 slot and would never finish: a budget of at least "
     "2,097,152 B"),  # max_tokens=7 would refuse the request itself
    (dict(budget_bytes=0), "a KV cache of 0 B holds 0 pages of 16 tokens at 131,072 B a token; the longest request "
     "(8 tokens) needs 1 page and would never finish: a budget of at least 2,097,152 B"),
])
def test_bad_serving_input_gives_one_line(kwargs, message):
    with pytest.raises(ValueError) as err:
        kv.serve(kwargs.get("model", "Llama-3-8B"), requests((5, 3)), steps=1,
                 **{"max_tokens": 16, **{k: v for k, v in kwargs.items() if k != "model"}})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_paged_serving_takes_a_budget_its_requests_fit_whatever_max_tokens_allows():
    """The refusal of a budget too small is the longest request's, not max_tokens': a paged cache of 512 MiB serves
    short requests under Llama-3-8B's 8,192-token context (it was refused while the check read max_tokens)."""
    r = kv.serve("Llama-3-8B", kv.arrivals(50, 1.0, 1024, seed=0), steps=50, budget_bytes=512 * 2**20)
    assert r.peak_running > 1 and r.memory_map.block_tokens == 16
    assert kv.serve("Llama-3-8B", (), steps=3, budget_bytes=0).snapshots[-1].running == 0  # nothing to serve


def test_serving_reads_a_generator_of_requests_as_it_reads_a_list():
    """The checks walked a generator's requests and left none to serve: nothing finished, silently."""
    reqs = kv.arrivals(50, 1.0, 1024, seed=0)
    listed = kv.serve("Llama-3-8B", reqs, steps=50, budget_bytes=512 * 2**20)
    generated = kv.serve("Llama-3-8B", (r for r in reqs), steps=50, budget_bytes=512 * 2**20)
    assert generated == listed and listed.finished > 0
    with pytest.raises(ValueError, match="requests=5 is not a collection of kvcache.Request"):
        kv.serve("Llama-3-8B", 5, steps=1)


def test_unknown_model():
    with pytest.raises(ValueError, match="unknown model='Llama-2'"):
        kv.bytes_per_token("Llama-2")


def test_a_preempted_request_resumes_before_one_that_was_already_waiting():
    """A preempted request goes back to the front of the queue (vLLM's scheduler: it was admitted first), ahead of a
    request that was waiting before the preemption. 3 pages of 4 tokens; A (id 0) and B (id 1): prompt 3, output 3;
    C (id 2): prompt 5, output 2 (it needs ceil((5 + 1) / 4) = 2 pages to be admitted). All arrive at step 0.
    Step 0: A and B take a page each (room for 3 + 1 tokens), C needs 2 but 1 is free: it waits. A and B grow to 4.
    Step 1: C still does not fit. A grows to 5: it takes the last page. B needs a page, none is free: B, the latest
            admitted, is preempted (its page freed) and queued before C: waiting [B, C].
    Step 2: B (4 tokens, + 1: 2 pages) does not fit in the 1 free page. A grows to 6, its 3rd token: it finishes,
            freeing its 2 pages (3 free).
    Step 3: B is readmitted first, into pages 0 and 1 (the lowest free), its 4 tokens recomputed; C, behind it, finds
            1 page. B grows to 5. (Queued behind C, B would wait and C run here.)
    Step 4: B grows to 6, its 3rd token: it finishes (3 pages free).
    Step 5: C is admitted into pages 0 and 1 and grows to 6. Step 6: C grows to 7 and finishes."""
    reqs = requests((3, 3), (3, 3), (5, 2))
    options = dict(policy="paged", page_size=4, max_tokens=8, budget_bytes=3 * 4 * 131_072)
    r = kv.serve("Llama-3-8B", reqs, steps=7, **options)
    t = 131_072
    assert [(s.running, s.waiting, s.used_bytes // t, s.reserved_bytes // t) for s in r.snapshots] == [
        (2, 1, 4 + 4, 2 * 4),  # A, B running; C waiting
        (1, 2, 5, 2 * 4),  # A (2 pages); B preempted, then C waiting
        (0, 2, 0, 0),  # A finished
        (1, 1, 5, 2 * 4),  # B resumed (5 tokens in 2 pages); C waiting
        (0, 1, 0, 0),  # B finished
        (1, 0, 6, 2 * 4),  # C running
        (0, 0, 0, 0)]  # C finished
    assert r.preemptions == 1 and r.finished == 3
    # who holds the pages after step 3: B (id 1), 4 tokens in page 0 and 1 in page 1
    assert kv.serve("Llama-3-8B", reqs, steps=4, **options).memory_map == kv.MemoryMap(4, (1, 1, -1), (4, 1, 0))
    # after step 5: C (id 2), 6 tokens: 4 in page 0, 2 in page 1
    assert kv.serve("Llama-3-8B", reqs, steps=6, **options).memory_map == kv.MemoryMap(4, (2, 2, -1), (4, 2, 0))
