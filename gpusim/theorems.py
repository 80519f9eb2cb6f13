"""The FlashAttention paper's I/O theorems as orders of growth, to overlay on simulated counts."""
from .shape import positive_int, positive_number


def theorem2(seq, head_dim, sram_elements):
    """Theorem 2, in elements moved: standard attention Θ(Nd + N²), FlashAttention Θ(N²d²/M) for an SRAM of
    M elements (d <= M <= Nd). Constants 1."""
    seq, head_dim = positive_int("seq", seq), positive_int("head_dim", head_dim)
    sram_elements = positive_number("sram_elements", sram_elements)
    return {"naive": seq * head_dim + seq**2, "flash": seq**2 * head_dim**2 / sram_elements}


def theorem5(seq, head_dim, sram_elements):
    """Theorem 5 of the FlashAttention paper, in elements moved by the backward: the forward's orders
    (Theorem 2), standard attention Θ(Nd + N²), FlashAttention Θ(N²d²/M). Constants 1."""
    return theorem2(seq, head_dim, sram_elements)
