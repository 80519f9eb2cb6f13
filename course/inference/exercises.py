"""The decode notebook's exercises, checked against gpusim.kvcache and gpusim.decode (course/checks.py).

    >>> from gpusim_course.inference import exercises as ex
    >>> ex.check("kv_bytes_per_token", kv_bytes_per_token)
    >>> ex.solution("kv_bytes_per_token")
"""
import math

import gpusim
from gpusim import decode, kvcache

from .. import checks
from ..checks import numeric

MODELS = tuple(kvcache.MODELS.values())
LONG_CACHE = 1 << 17  # enough K/V chunks for any split count the cases need


def kv_bytes_per_token(layers, heads, kv_heads, head_dim, itemsize):
    return 2 * layers * kv_heads * head_dim * itemsize  # K and V, every layer, every K/V head


def _check_kv_bytes_per_token(fn):
    # fp32 first: at 2 bytes an element, "forgot the itemsize" and "forgot V" give the same number
    cases = [((m.layers, m.heads, m.kv_heads, m.head_dim, gpusim.DTYPE_BYTES[dtype]), kvcache.bytes_per_token(m, dtype))
             for dtype in ("fp32", "fp16", "fp8") for m in MODELS]

    def hint(args, got, want):
        layers, heads, kv_heads, head_dim, e = args
        want = kv_bytes_per_token(*args)
        if got == want // 2:
            return "A token caches two vectors per K/V head and layer: its key and its value."
        if got == want * heads // kv_heads:
            return "The cache holds the K/V heads only (grouped-query attention): use kv_heads, not heads."
        if got == want // layers:
            return "Every layer keeps its own cache: multiply by layers."
        if got == want // e:
            return "That is elements: multiply by itemsize for bytes."
        return "bytes per token = 2 (K and V) x layers x kv_heads x head_dim x itemsize."

    return numeric(fn, cases, hint)


def largest_batch(hbm_bytes, weight_bytes, context_tokens, bytes_per_token):
    return max(0, (hbm_bytes - weight_bytes) // (context_tokens * bytes_per_token))


def _check_largest_batch(fn):
    cases = []
    for gpu in ("H200", "A100-80GB", "H100-SXM"):
        g = gpusim.get_gpu(gpu)
        for m in MODELS:
            for context, dtype in ((8192, "fp16"), (3000, "fp8"), (131072, "bf16")):
                args = (g.hbm_bytes, m.weight_bytes, context, kvcache.bytes_per_token(m, dtype))
                cases.append((args, kvcache.max_batch(m, g, context, dtype)))

    def hint(args, got, want):
        hbm, weights, context, per_token = args
        if got == hbm // (context * per_token):
            return "The weights sit in HBM too: only hbm_bytes - weight_bytes is left for the cache."
        if got < 0:  # before rounding: int() of a negative share rounds it up, as ceil does
            return "When the weights alone fill the GPU, no request fits: the answer is 0, not negative."
        share = (hbm - weights) / (context * per_token)
        if math.isfinite(got) and (got == math.ceil(share) or (got != int(got) and math.isclose(got, share))):
            return "A request fits whole or not at all: round down (//)."
        return "largest batch = (hbm_bytes - weight_bytes) // (context_tokens x bytes_per_token), at least 0."

    return numeric(fn, cases, hint)


def splits_to_fill(batch, heads, kv_heads, sm_count):
    return math.ceil(sm_count / (batch * kv_heads))  # one program per (request, K/V head, split)


def _gpusim_splits(batch, heads, kv_heads, sm_count):
    """The fewest splits for which gpusim.decode's grid has a program for every SM."""
    gpu = next(g for g in gpusim.PRESETS.values() if g.sm_count == sm_count)
    for s in range(1, sm_count + 1):
        launch = decode.make_launch(batch=batch, heads=heads, kv_heads=kv_heads, head_dim=128, seq_kv=LONG_CACHE,
                                    num_splits=s, gpu=gpu)
        if decode.programs(launch, "split_kv" if s > 1 else "decode") >= sm_count:
            return s
    raise ValueError(f"no split count fills {sm_count} SMs")


def _check_splits_to_fill(fn):
    shapes = [(1, 32, 8, 132), (2, 32, 8, 132), (3, 32, 8, 132), (1, 64, 8, 108), (1, 32, 32, 132), (64, 32, 8, 132),
              (1, 32, 4, 132), (2, 12, 6, 132)]  # the last two divide sm_count evenly
    cases = [(args, _gpusim_splits(*args)) for args in shapes]

    def hint(args, got, want):
        batch, heads, kv_heads, sms = args
        if got == math.ceil(sms / (batch * heads)):
            return ("Grouped, one program serves all the query heads of a K/V head: there are batch x kv_heads "
                    "programs per split, not batch x heads.")
        if got == sms // (batch * kv_heads):
            return "Round up: with one split fewer, some SMs get no program."
        if got == sms // (batch * kv_heads) + 1 and sms % (batch * kv_heads) == 0:
            return ("Here batch x kv_heads divides sm_count evenly, and rounding down then adding 1 gives one split "
                    "too many: round up (ceiling division) instead.")
        if got == math.ceil(sms / kv_heads):
            return "Every request brings its own kv_heads programs per split: divide by batch x kv_heads."
        return "The grid has batch x kv_heads x num_splits programs: the fewest splits with at least sm_count."

    return numeric(fn, cases, hint)


def kv_read_bytes(batch, heads, kv_heads, seq_kv, head_dim, itemsize, grouped):
    readers = kv_heads if grouped else heads  # grouped: one program per K/V head reads it once
    return 2 * batch * readers * seq_kv * head_dim * itemsize  # K and V


def _kv_case(batch, heads, kv_heads, seq_kv, head_dim, dtype, grouped):
    launch = decode.make_launch(batch=batch, heads=heads, kv_heads=kv_heads, head_dim=head_dim, seq_kv=seq_kv,
                                dtype=dtype, grouped=grouped, page_size=16)
    count = decode.count(launch)
    read = sum(r for (_, tensor), (r, _) in count.items() if tensor in ("K", "V"))
    return (batch, heads, kv_heads, seq_kv, head_dim, gpusim.DTYPE_BYTES[dtype], grouped), read


def _check_kv_read_bytes(fn):
    shapes = [(1, 32, 8, 4096, 128, "fp16", True), (1, 32, 8, 4096, 128, "fp16", False),
              (4, 64, 8, 1000, 128, "bf16", True), (4, 64, 8, 1000, 128, "bf16", False),
              (2, 8, 8, 777, 64, "fp32", True), (3, 16, 2, 300, 64, "fp8", False)]
    cases = [_kv_case(*shape) for shape in shapes]

    def hint(args, got, want):
        batch, heads, kv_heads, seq_kv, head_dim, e, grouped = args
        want = kv_read_bytes(*args)
        if got == want // 2:
            return "Count both tensors: every key and every value is read."
        if got == kv_read_bytes(batch, heads, kv_heads, seq_kv, head_dim, e, not grouped):
            return ("Grouped, each K/V head is read once for its whole group; ungrouped, once per query head."
                    if grouped else "Ungrouped, every query head's program reads its K/V head again.")
        if got == want // batch:
            return "Every request has its own cache: multiply by batch."
        return "K and V bytes = 2 x batch x (kv_heads if grouped else heads) x seq_kv x head_dim x itemsize."

    return numeric(fn, cases, hint)


EXERCISES = {
    "kv_bytes_per_token": (_check_kv_bytes_per_token, kv_bytes_per_token),
    "largest_batch": (_check_largest_batch, largest_batch),
    "splits_to_fill": (_check_splits_to_fill, splits_to_fill),
    "kv_read_bytes": (_check_kv_read_bytes, kv_read_bytes),
}


def check(name, fn):
    """Run the learner's `fn` for exercise `name` against gpusim; a Verdict (shown in color)."""
    return checks.check(EXERCISES, name, fn)


def solution(name):
    """Print a reference solution of exercise `name`."""
    checks.solution(EXERCISES, name)
