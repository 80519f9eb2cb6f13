"""The policy of the block-size sliders (notebook 4's TilingExplorer), as pure functions of a `config`: the
keyword arguments of gpusim.simulate. block_q (Br) and block_kv (Bc) move between powers of two and only as
far as gpusim accepts the tile (its SRAM, the pipeline's stages included, and its registers); where a slider stops,
gpusim's own message says why.
"""
import gpusim

BLOCKS = tuple(2**p for p in range(4, 10))  # 16 .. 512: the values the block sliders move between
BLOCK_NAMES = ("block_q", "block_kv")
BLOCK_LABELS = {"block_q": "block_q (Br)", "block_kv": "block_kv (Bc)"}  # the code's name, then the paper's


def is_pow2(n):
    return n > 0 and n & (n - 1) == 0


def snap(old, new):
    """A block slider moved from old to new: the next power of two in the direction it moved."""
    if new > old:
        return 1 << (new - 1).bit_length()
    return 1 << (new.bit_length() - 1)


def config_error(config):
    """gpusim's message when simulate(**config) refuses the configuration; None when it accepts it."""
    try:
        gpusim.simulate(**config)
    except ValueError as err:
        return str(err)
    return None


def fit_blocks(config):
    """(config, caps, limits) for the sliders. config: the given one, or with the paper's blocks (gpusim.paper_blocks)
    when its blocks do not fit, or gpusim.best_blocks' when those do not either (the paper's rule counts SRAM, not
    registers: at d = 256 its 64 x 64 needs more registers than a thread has). caps: {name: the largest block in
    BLOCKS that fits beside the other block}. limits: {name: (cap, gpusim's message for twice the cap)} for the
    blocks stopped below BLOCKS[-1]. Raises gpusim's ValueError when no block size can fix the configuration."""
    if config_error(config):
        config = config | dict(zip(BLOCK_NAMES, gpusim.paper_blocks(config["algo"], config["gpu"],
                                                                        config["head_dim"], config["dtype"])))
    if config_error(config):
        shape = {k: v for k, v in config.items() if k not in ("algo", *BLOCK_NAMES)}
        config = config | dict(zip(BLOCK_NAMES, gpusim.best_blocks(config["algo"], **shape)))
    gpusim.simulate(**config)
    caps, limits = {}, {}
    for name in BLOCK_NAMES:
        caps[name] = max(b for b in BLOCKS if config_error(config | {name: b}) is None)
        if caps[name] < BLOCKS[-1]:
            limits[name] = (caps[name], config_error(config | {name: 2 * caps[name]}))
    return config, caps, limits
