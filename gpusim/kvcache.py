"""KV-cache memory: what each cached token costs, and what serving many requests at once does with it.

    bytes per token = 2 (K and V) * layers * kv_heads * head_dim * bytes per element

Serving is simulated in decode steps. Requests arrive (a seeded Poisson stream, lengths drawn from a
seeded distribution), are admitted first come first served while memory allows, grow by one token per
step and leave when their output is done. Two allocators hold their caches:
- contiguous: each admitted request reserves a slot of max_tokens tokens (its longest possible length),
  as servers did before PagedAttention; the reserved-but-unused tokens are wasted;
- paged: a request holds ceil(length / P) pages of P tokens, taking a new page when its last one is
  full; only the unused rows of each request's last page are wasted (internal fragmentation). When no
  page is free for a growing request, the most recently admitted one is preempted (its pages freed, its
  cache recomputed on readmission), as vLLM's scheduler does.
"""
import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np

from .hardware import DTYPE_BYTES, by_name, dtype_name, get_gpu
from .shape import MAX_SEQ, positive_int, positive_number

# ShareGPT's mean prompt and output lengths, tokens, as the vLLM paper reports them (Kwon et al., "Efficient
# Memory Management for Large Language Model Serving with PagedAttention", SOSP 2023, Fig. 11): 161.31 and
# 337.99. The lengths drawn are geometric with these means (the shape is this model's choice).
SHAREGPT_MEAN_PROMPT_TOKENS = 161.31
SHAREGPT_MEAN_OUTPUT_TOKENS = 337.99
MAX_STEPS = 1 << 23  # the most steps, and requests, a simulation of serving draws (an array of each)


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's shape, as its config.json gives it."""
    name: str
    layers: int  # num_hidden_layers
    heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads
    head_dim: int  # hidden_size / num_attention_heads
    hidden: int  # hidden_size
    intermediate: int  # intermediate_size (the SwiGLU MLP's width)
    vocab: int  # vocab_size
    max_tokens: int  # max_position_embeddings: the longest context
    weight_dtype: str = "bf16"  # torch_dtype of the released weights

    @property
    def params(self):
        """Parameters: untied input and output embeddings; per layer Q and O projections (hidden x hidden),
        K and V projections (hidden x kv_heads * head_dim), a gated MLP (3 x hidden x intermediate) and two
        RMSNorm weights; a final norm."""
        h, kv = self.hidden, self.kv_heads * self.head_dim
        per_layer = 2 * h * h + 2 * h * kv + 3 * h * self.intermediate + 2 * h
        return 2 * self.vocab * h + self.layers * per_layer + h

    @property
    def weight_bytes(self):
        return self.params * DTYPE_BYTES[self.weight_dtype]


MODELS = {
    m.name: m
    for m in [
        # meta-llama/Meta-Llama-3-8B, config.json on Hugging Face (Meta's Llama 3 release): num_hidden_layers 32,
        # num_attention_heads 32, num_key_value_heads 8, hidden_size 4096 (head_dim 4096 / 32 = 128),
        # intermediate_size 14336, vocab_size 128256, max_position_embeddings 8192, torch_dtype bfloat16.
        # The parameters come to 8,030,261,248: the model card's "8B".
        ModelShape("Llama-3-8B", layers=32, heads=32, kv_heads=8, head_dim=128, hidden=4096, intermediate=14336,
                   vocab=128256, max_tokens=8192),
        # meta-llama/Meta-Llama-3-70B, config.json: num_hidden_layers 80, num_attention_heads 64,
        # num_key_value_heads 8, hidden_size 8192 (head_dim 128), intermediate_size 28672, vocab_size 128256,
        # max_position_embeddings 8192, torch_dtype bfloat16. 70,553,706,496 parameters: the model card's "70B".
        ModelShape("Llama-3-70B", layers=80, heads=64, kv_heads=8, head_dim=128, hidden=8192, intermediate=28672,
                   vocab=128256, max_tokens=8192),
        # meta-llama/Llama-3.1-8B, config.json on Hugging Face (Meta's Llama 3.1 release): Llama-3-8B's shape
        # (num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, hidden_size 4096, intermediate_size
        # 14336, vocab_size 128256, torch_dtype bfloat16) trained to a longer context: max_position_embeddings
        # 131072 (rope_scaling "llama3", factor 8 over original_max_position_embeddings 8192).
        ModelShape("Llama-3.1-8B", layers=32, heads=32, kv_heads=8, head_dim=128, hidden=4096, intermediate=14336,
                   vocab=128256, max_tokens=131072),
        # meta-llama/Llama-3.1-70B, config.json: Llama-3-70B's shape (num_hidden_layers 80, num_attention_heads 64,
        # num_key_value_heads 8, hidden_size 8192, intermediate_size 28672, vocab_size 128256, torch_dtype
        # bfloat16), max_position_embeddings 131072 (rope_scaling as the 8B's).
        ModelShape("Llama-3.1-70B", layers=80, heads=64, kv_heads=8, head_dim=128, hidden=8192, intermediate=28672,
                   vocab=128256, max_tokens=131072),
    ]
}


def get_model(model):
    """A ModelShape from its name (case-insensitive, as GPUs and links) or one passed through."""
    return by_name("model", "models", model, MODELS, ModelShape)


def bytes_per_token(model, dtype="fp16"):
    """KV-cache bytes one token costs: K and V, every layer, every K/V head."""
    m = get_model(model)
    return 2 * m.layers * m.kv_heads * m.head_dim * DTYPE_BYTES[dtype_name(dtype)]


def kv_budget_bytes(model, gpu):
    """HBM left for the KV cache beside the weights (negative when the weights alone do not fit)."""
    return get_gpu(gpu).hbm_bytes - get_model(model).weight_bytes


def max_batch(model, gpu, context_tokens, dtype="fp16"):
    """Requests of context_tokens tokens each whose caches fit beside the weights."""
    context_tokens = positive_int("context_tokens", context_tokens)
    return max(0, kv_budget_bytes(model, gpu) // (context_tokens * bytes_per_token(model, dtype)))


@dataclass(frozen=True)
class Request:
    id: int
    arrival_step: int
    prompt_tokens: int
    output_tokens: int


def arrivals(steps, per_step, max_tokens, seed=0, mean_prompt_tokens=SHAREGPT_MEAN_PROMPT_TOKENS,
             mean_output_tokens=SHAREGPT_MEAN_OUTPUT_TOKENS):
    """A seeded stream of requests: Poisson(per_step) arrivals per step; prompt and output lengths geometric
    with the given means, the prompt clipped to max_tokens - 1 and the output to what is left."""
    steps = positive_int("steps", steps, MAX_STEPS, zero=True)
    max_tokens = positive_int("max_tokens", max_tokens, MAX_SEQ)
    if max_tokens < 2:
        raise ValueError(f"max_tokens={max_tokens}: a request needs a prompt token and an output token")
    per_step = positive_number("per_step", per_step, zero=True)  # 0: no load
    if steps * per_step > MAX_STEPS:
        raise ValueError(f"steps={steps:,} of per_step={per_step:g} arrivals: more than the {MAX_STEPS:,} requests "
                         f"a serving simulation draws")
    for name, mean in (("mean_prompt_tokens", mean_prompt_tokens), ("mean_output_tokens", mean_output_tokens)):
        if positive_number(name, mean) < 1:
            raise ValueError(f"{name}={mean!r}: a geometric length has a mean of at least 1 token")
    rng = np.random.default_rng(positive_int("seed", seed, zero=True))
    counts = rng.poisson(per_step, steps)
    n = int(counts.sum())
    prompt = np.minimum(rng.geometric(1 / mean_prompt_tokens, n), max_tokens - 1)
    output = np.minimum(rng.geometric(1 / mean_output_tokens, n), max_tokens - prompt)
    step = np.repeat(np.arange(steps), counts)
    return tuple(Request(i, int(step[i]), int(prompt[i]), int(output[i])) for i in range(n))


@dataclass(frozen=True)
class Snapshot:
    """Memory at the end of one decode step."""
    step: int
    running: int  # requests holding cache memory
    waiting: int  # arrived, not admitted (or preempted)
    used_bytes: int  # the cached tokens themselves
    reserved_bytes: int  # what the allocator holds for them

    @property
    def wasted_bytes(self):
        return self.reserved_bytes - self.used_bytes


@dataclass(frozen=True)
class MemoryMap:
    """The cache memory as equal blocks: contiguous slots of max_tokens, or pages of page_size tokens."""
    block_tokens: int
    owner: tuple  # request id per block, -1 when free
    used_tokens: tuple  # tokens cached in each block


@dataclass(frozen=True)
class Serving:
    policy: str  # "contiguous" or "paged"
    page_size: int | None
    bytes_per_token: int
    budget_bytes: int
    snapshots: tuple
    finished: int
    preemptions: int
    memory_map: MemoryMap  # after the last step

    @property
    def peak_running(self):
        return max((s.running for s in self.snapshots), default=0)

    @property
    def wasted_fraction(self):
        """Wasted over reserved bytes, summed over the steps (0 when nothing was ever reserved)."""
        reserved = sum(s.reserved_bytes for s in self.snapshots)
        return sum(s.wasted_bytes for s in self.snapshots) / reserved if reserved else 0.0


def serve(model, requests, *, steps, policy="paged", page_size=16, max_tokens=None, dtype="fp16", gpu="H200",
          budget_bytes=None):
    """Simulate `steps` decode steps of serving `requests` (see arrivals). max_tokens: the longest request
    the server accepts, which the contiguous policy reserves (default: the model's context).
    budget_bytes: the KV-cache memory (default: the GPU's HBM beside the weights)."""
    m = get_model(model)
    max_tokens = positive_int("max_tokens", m.max_tokens if max_tokens is None else max_tokens)
    steps = positive_int("steps", steps, MAX_STEPS, zero=True)
    requests = _requests(requests)
    _check_serving(requests, policy, page_size, max_tokens)
    per_token = bytes_per_token(m, dtype)
    budget = _budget(m, gpu, budget_bytes)
    block = max_tokens if policy == "contiguous" else page_size
    pool = _Pool(_blocks(budget, block, per_token, requests, policy), block, policy)
    pending = deque(sorted(requests, key=lambda r: (r.arrival_step, r.id)))
    waiting, snapshots, finished = deque(), [], 0
    for step in range(steps):
        while pending and pending[0].arrival_step <= step:
            waiting.append(_Job(pending.popleft()))
        while waiting and pool.admit(waiting[0]):
            waiting.popleft()
        pool.grow(waiting)
        finished += pool.finish()
        snapshots.append(Snapshot(step, len(pool.running), len(waiting), pool.tokens() * per_token,
                                  pool.reserved_blocks() * block * per_token))
    return Serving(policy, page_size if policy == "paged" else None, per_token, budget, tuple(snapshots), finished,
                   pool.preemptions, pool.memory_map())


def _budget(model, gpu, budget_bytes):
    """The KV cache's bytes: budget_bytes, or the HBM beside the weights; one line where the weights alone do not fit."""
    if budget_bytes is not None:
        return positive_int("budget_bytes", budget_bytes, zero=True)
    g = get_gpu(gpu)
    if model.weight_bytes > g.hbm_bytes:
        raise ValueError(f"{model.name}'s weights ({model.weight_bytes:,} B) do not fit in {g.name}'s HBM "
                         f"({g.hbm_bytes:,} B): no memory is left for a KV cache (budget_bytes= serves as if it were)")
    return g.hbm_bytes - model.weight_bytes


def _blocks(budget, block, per_token, requests, policy):
    """The blocks of `block` tokens the budget holds; one line where the longest request could not be served even
    alone (contiguous: a slot of max_tokens; paged: the pages of its prompt and output), as it would wait, or be
    preempted, for ever."""
    blocks = budget // (block * per_token)
    longest = max((r.prompt_tokens + r.output_tokens for r in requests), default=0)
    need = -(-longest // block) if policy == "paged" else min(1, longest)
    if blocks >= need:
        return blocks
    unit, most = ("slot", budget // per_token) if policy == "contiguous" else ("page", blocks * block)
    fix = f"give max_tokens at most {most:,}, or a larger budget" if policy == "contiguous" and most >= longest else (
        f"a budget of at least {need * block * per_token:,} B")
    raise ValueError(f"a KV cache of {budget:,} B holds {blocks:,} {unit}{'s' * (blocks != 1)} of {block:,} tokens "
                     f"at {per_token:,} B a token; the longest request ({longest:,} tokens) needs {need:,} "
                     f"{unit}{'s' * (need != 1)} and would never finish: {fix}")


def _requests(requests):
    """requests as a tuple, read once (a generator's items would be spent by the checks); one line where they are not
    a collection."""
    try:
        return tuple(requests)
    except TypeError:
        raise ValueError(f"requests={requests!r} is not a collection of kvcache.Request (kvcache.arrivals makes "
                         "them)") from None


def _check_serving(requests, policy, page_size, max_tokens):
    """One line for a policy, page size or request serve cannot take."""
    if policy not in ("contiguous", "paged"):
        raise ValueError(f"policy={policy!r} is not one of contiguous, paged")
    if policy == "paged":
        positive_int("page_size", page_size, what="number of tokens per page")
    seen = set()
    for r in requests:
        if not isinstance(r, Request):
            raise ValueError(f"requests holds {r!r}: expected kvcache.Request items (kvcache.arrivals makes them)")
        if r.id in seen:  # the memory map names each block's owner by id: two requests would share their blocks
            raise ValueError(f"requests holds two of id {r.id}: each request's id must be its own")
        seen.add(r.id)
        if r.prompt_tokens < 1 or r.output_tokens < 1 or r.prompt_tokens + r.output_tokens > max_tokens:
            raise ValueError(f"request {r.id} has {r.prompt_tokens} + {r.output_tokens} tokens: each part must be "
                             f">= 1 and the sum <= max_tokens={max_tokens:,}")


class _Job:
    def __init__(self, request):
        self.request, self.generated, self.blocks, self.running = request, 0, [], False

    @property
    def length(self):  # tokens in its cache
        return self.request.prompt_tokens + self.generated


class _Pool:
    """Blocks of `block` tokens, the lowest free one taken first; running jobs in admission order."""

    def __init__(self, n_blocks, block, policy):
        self.owner = np.full(n_blocks, -1, dtype=np.int64)
        self.free = list(range(n_blocks))  # a heap
        self.block, self.policy, self.running, self.preemptions = block, policy, [], 0

    def _need(self, tokens):  # blocks a job of `tokens` tokens holds
        return 1 if self.policy == "contiguous" else -(-tokens // self.block)

    def _take(self, job, n):
        for _ in range(n):
            block = heapq.heappop(self.free)
            self.owner[block] = job.request.id
            job.blocks.append(block)

    def _release(self, job):
        for block in job.blocks:
            self.owner[block] = -1
            heapq.heappush(self.free, block)
        job.blocks, job.running = [], False

    def _evict(self, job, waiting):
        """Preempt: free the job's blocks and queue it first; it resumes by recomputing its cache."""
        self._release(job)
        waiting.appendleft(job)
        self.preemptions += 1

    def admit(self, job):
        """Prefill: room for the prompt (and what was generated before a preemption) plus the next token."""
        need = self._need(job.length + 1)
        if len(self.free) < need:
            return False
        self._take(job, need)
        job.running = True
        self.running.append(job)
        return True

    def grow(self, waiting):
        """Every running job appends one token; a paged job whose last page is full takes a new one,
        preempting the most recently admitted jobs while none is free (itself last)."""
        for job in list(self.running):
            if not job.running:  # preempted for an earlier job this step
                continue
            extra = self._need(job.length + 1) - len(job.blocks)
            while extra > len(self.free) and job.running:
                victim = next(j for j in reversed(self.running) if j.running)
                self._evict(victim, waiting)
            if job.running:
                self._take(job, extra)
                job.generated += 1
        self.running = [job for job in self.running if job.running]

    def finish(self):
        """Jobs whose output is complete leave; returns how many."""
        done = [job for job in self.running if job.generated == job.request.output_tokens]
        for job in done:
            self._release(job)
        self.running = [job for job in self.running if job.running]
        return len(done)

    def tokens(self):
        return sum(job.length for job in self.running)

    def reserved_blocks(self):
        return len(self.owner) - len(self.free)

    def memory_map(self):
        used = np.zeros(len(self.owner), dtype=np.int64)
        for job in self.running:
            left = job.length
            for block in job.blocks:
                used[block] = min(left, self.block)
                left -= used[block]
        return MemoryMap(self.block, tuple(self.owner.tolist()), tuple(used.tolist()))
