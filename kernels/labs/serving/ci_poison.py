"""Run one lab with every fresh floating-point allocation filled with NaN (CI only).

Why: `torch.empty` hands back whatever bits the allocator had. An engine that reads a position
it never wrote (and relies on a mask to ignore it) passes on one machine and fails on another,
depending on what the memory held before. Filling fresh memory with NaN makes such a read fail
everywhere, every time: 0 x NaN is NaN, so a masked read still reaches the tokens.

Usage: python ci_poison.py LAB.py
"""

import runpy
import sys

import torch


def poisoned(make):
    def wrapper(*args, **kwargs):
        t = make(*args, **kwargs)
        if t.is_floating_point():
            t.fill_(float("nan"))
        return t
    return wrapper


torch.empty = poisoned(torch.empty)
torch.empty_like = poisoned(torch.empty_like)
lab = sys.argv[1]
sys.argv = [lab]
runpy.run_path(lab, run_name="__main__")
