"""Shrinking a failing query: greedy, one simplification at a time, keeping a smaller
tree whenever it still fails the same way."""

from .ast import size, variants


def shrink(query, still_fails, budget=400):
    """The smallest query reached from `query` whose `still_fails(q)` holds, trying at
    most `budget` candidates."""
    best, best_size, tries = query, size(query), 0
    improved = True
    while improved and tries < budget:
        improved = False
        for cand in variants(best):
            cand_size = size(cand)
            if cand_size >= best_size:
                continue
            tries += 1
            if still_fails(cand):
                best, best_size, improved = cand, cand_size, True
                break
            if tries >= budget:
                break
    return best
