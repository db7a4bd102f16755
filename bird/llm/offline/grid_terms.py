"""The offline synthesiser's distances on a categorical grid state (a field shown as an (H, W, C) array of integer
ids, e.g. BabyAI's): a cell class is a (channel 0, channel 1) pair, its positions the cells holding it, and the
distance between two classes the smallest Manhattan distance between their cells (H + W when either is absent).
Read from the shown states alone: the synthesiser knows no id's meaning. A measure is named "<field>@a0,a1|b0,b1"."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

__all__ = ["grid_pairs", "grid_distance", "is_grid_pair", "GRID_HELPERS", "grid_term_code"]

_SPARSE = 4  # a class on more cells than this is background (walls, floor), never measured


def _grids(state: dict[str, Any]) -> dict[str, np.ndarray]:
    """The state's fields that are (H, W, C) integer arrays."""
    out = {}
    for name, value in state.items():
        if isinstance(value, list) and value and isinstance(value[0], list) and value[0] and isinstance(value[0][0], list):
            arr = np.asarray(value)
            if arr.ndim == 3 and arr.shape[2] >= 2:
                out[name] = arr
    return out


def is_grid_pair(pair: tuple[str, str]) -> bool:
    return "@" in pair[0]


def _name(field: str, a: tuple[int, int], b: tuple[int, int]) -> tuple[str, str]:
    return f"{field}@{a[0]},{a[1]}", f"{field}@{b[0]},{b[1]}"


def grid_pairs(states: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Pairs of sparse cell classes seen in the shown states (in the order first seen)."""
    classes: dict[str, list[tuple[int, int]]] = {}
    for state in states:
        for field, grid in _grids(state).items():
            counts = Counter(map(tuple, grid[..., :2].reshape(-1, 2).tolist()))
            seen = classes.setdefault(field, [])
            seen += [c for c, k in counts.items() if k <= _SPARSE and c not in seen]
    return [_name(f, a, b) for f, cs in classes.items() for i, a in enumerate(cs) for b in cs[i + 1 :]]


def _parse(measure: str) -> tuple[str, tuple[int, int]]:
    field, _, ids = measure.partition("@")
    t, c = ids.split(",")
    return field, (int(t), int(c))


def _cells(grid: np.ndarray, cls: tuple[int, int]) -> np.ndarray:
    return np.argwhere((grid[..., 0] == cls[0]) & (grid[..., 1] == cls[1]))


def grid_distance(state: dict[str, Any], pair: tuple[str, str]) -> float | None:
    """The measure's value on one shown state (None when the state has no such field)."""
    (field, a), (_, b) = _parse(pair[0]), _parse(pair[1])
    if field not in state:
        return None
    grid = np.asarray(state[field])
    ca, cb = _cells(grid, a), _cells(grid, b)
    if not len(ca) or not len(cb):
        return float(grid.shape[0] + grid.shape[1])
    return float(np.abs(ca[:, None, :] - cb[None, :, :]).sum(-1).min())


GRID_HELPERS = [
    "def cells(grid, cls):",
    "    grid = np.asarray(grid)",
    "    return np.argwhere((grid[..., 0] == cls[0]) & (grid[..., 1] == cls[1]))",
    "",
    "",
    "def grid_distance(grid, a, b):",
    '    """Smallest Manhattan distance between a cell of class a and one of class b (H + W if either is absent)."""',
    "    ca, cb = cells(grid, a), cells(grid, b)",
    "    if len(ca) == 0 or len(cb) == 0:",
    "        return float(np.shape(grid)[0] + np.shape(grid)[1])",
    "    return float(np.abs(ca[:, None, :] - cb[None, :, :]).sum(-1).min())",
    "", "",
]


def grid_term_code(a: str, b: str) -> str:
    """The program's expression for the measure (a, b)."""
    (field, ca), (_, cb) = _parse(a), _parse(b)
    return f"grid_distance(state[{field!r}], {ca!r}, {cb!r})"
