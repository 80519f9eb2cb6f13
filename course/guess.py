"""Predict, then reveal: the learner types a guess (bytes, time, a count of requests or a percentage) before a
widget shows gpusim's answer.

Pure functions: `parse` reads a guess such as "64 MiB", "1.5e9", "12 ms", "80us", "24 requests" or "12.5%" into
bytes, seconds, requests or percent (one clear line when it cannot), and `judge` says how far it was from the
answer, as a factor.
"""
import math
import re

UNITS = {
    "bytes": {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2**10, "mib": 2**20,
              "gib": 2**30, "tib": 2**40},
    "time": {"": 1, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9},  # the micro sign, and mu
    "requests": {"": 1, "request": 1, "requests": 1},
    "percent": {"": 1, "%": 1},
}
EXAMPLES = {"bytes": "e.g. 64 MiB, 2.1 GB or 1.5e9", "time": "e.g. 1.2 ms, 80 us or 0.003 s",
            "requests": "e.g. 24 or 24 requests", "percent": "e.g. 12.5 or 12.5%"}
COUNTS = {"requests"}  # kinds whose answer can be 0: no request fits where the weights fill the GPU
CLOSE = 1.1  # within 10%: spot on
NEAR = 2.0  # within a factor of two: the right idea
_NUMBER = re.compile(r"^\s*([-+]?(?:\d[\d,_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zA-Zµμ%]*)\s*$")
_DECIMAL_COMMA = re.compile(r",(?!\d{3}(?!\d))")  # a comma not before a group of three digits: 1,5 or 1,50


def parse(text, kind):
    """A guess as a positive number of bytes (kind "bytes"), seconds ("time") or percent ("percent"), or a
    number of requests, 0 or more ("requests"). A bare number is in those units. Raises ValueError naming the
    text and what would have been understood."""
    units = UNITS[kind]
    match = _NUMBER.match(str(text))
    unit = match and match.group(2).lower()
    if not match or unit not in units:
        raise ValueError(f"cannot read {text!r} as {kind}: write a number, {EXAMPLES[kind]}")
    if _DECIMAL_COMMA.search(match.group(1)):
        raise ValueError(f"cannot read {text!r}: a comma separates thousands, as in 1,000; a decimal takes a point, "
                         f"as in 1.5")
    value = float(match.group(1).replace(",", "").replace("_", "")) * units[unit]
    if not math.isfinite(value) or value < 0 or (value == 0 and kind not in COUNTS):
        least = f"a number of {kind}, 0 or more" if kind in COUNTS else f"a positive number of {kind}"
        raise ValueError(f"the guess {text!r} must be {least}")
    return value


def judge(guess, answer):
    """{"factor": how many times off (>= 1; infinite where one of them is 0 and the other not), "high": the guess
    was above, "verdict": a word} for a guess."""
    low, high = sorted((guess, answer))
    factor = high / low if low else 1.0 if high == 0 else math.inf
    verdict = "spot on" if factor <= CLOSE else "close" if factor <= NEAR else "off"
    return {"factor": factor, "high": guess > answer, "verdict": verdict}


def sentence(guess_text, guess, answer, answer_text):
    """What the reveal says: the guess, the answer and how far apart they are."""
    j = judge(guess, answer)
    side = f"too {'high' if j['high'] else 'low'}"
    if j["verdict"] == "spot on":
        how = "within 10%"
    else:
        how = side if math.isinf(j["factor"]) else f"{j['factor']:,.1f}x {side}"
    return f"Your guess {guess_text.strip()} against gpusim's {answer_text}: {j['verdict']} ({how})."
