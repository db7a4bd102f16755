"""A search tree of rewards (RF-Agent): nodes are candidates, edges parent → child; UCT picks the leaves to expand
and tree actions (registry family operator) write their children.

The tree is read off the candidates themselves (a candidate made by a tree action hangs under its parent; the
first iteration's samples hang under a virtual root), so it needs no state beyond the search's candidates and
reports. Node values use fitness min-max normalised over the tree, so λ is on the scale of a [0, 1] value."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bird.components.operators import SamplePlan
from bird.config.schema import BirdConfig
from bird.registry import get, register
from bird.state import SearchState

__all__ = ["Tree", "build_tree", "uct_lambda", "select_leaves", "rescale_counts"]

ROOT = "<root>"


@dataclass
class Tree:
    """parent/children of every node (ROOT included), and each node's raw fitness (failed → tree.failure_value)."""

    parent: dict[str, str]
    children: dict[str, list[str]]
    fitness: dict[str, float]
    alive: dict[str, bool]
    self_score: dict[str, float]  # self-verify rating in [-1, 1], when the search asks for one

    def depth(self, node: str) -> int:
        d = 0
        while node != ROOT:
            node, d = self.parent[node], d + 1
        return d

    def subtree(self, node: str) -> list[str]:
        out, todo = [], [node]
        while todo:
            n = todo.pop()
            out += [n] if n != ROOT else []
            todo += self.children.get(n, [])
        return out


def build_tree(cfg: BirdConfig, state: SearchState) -> Tree:
    """The tree of every candidate so far (built while generating, when all of them are finished)."""
    parent: dict[str, str] = {}
    children: dict[str, list[str]] = {ROOT: []}
    fitness, alive, self_score = {}, {}, {}
    for cid, cand in state.candidates.items():
        up = cand.parent_id if cand.parent_id in parent else ROOT
        parent[cid] = up
        children.setdefault(up, []).append(cid)
        children.setdefault(cid, [])
        f = state.fitness(cid)
        alive[cid] = f is not None and cand.alive
        fitness[cid] = f if f is not None else cfg.tree.failure_value
        sv = state.self_verify.get(cid)
        if sv is not None:
            self_score[cid] = float(sv)
    return Tree(parent, children, fitness, alive, self_score)


def uct_lambda(cfg: BirdConfig, trainings: int) -> float:
    """λ annealed linearly from tree.lambda0 to tree.lambda_final over tree.horizon_trainings trainings."""
    frac = min(1.0, max(0, trainings) / max(1, cfg.tree.horizon_trainings))
    return cfg.tree.lambda0 + (cfg.tree.lambda_final - cfg.tree.lambda0) * frac


def node_values(cfg: BirdConfig, tree: Tree) -> dict[str, float]:
    """V(n) = best·max f̂(subtree) + mean·mean f̂(subtree) + (1 − best − mean)·own(n), where f̂ is fitness min-max
    normalised over the tree and own(n) is the self-verify rating mapped to [0, 1] when there is one, else f̂(n)."""
    if not tree.fitness:
        return {}
    lo, hi = min(tree.fitness.values()), max(tree.fitness.values())
    norm = {n: (f - lo) / (hi - lo) if hi > lo else 0.5 for n, f in tree.fitness.items()}
    w_best, w_mean = cfg.tree.best_weight, cfg.tree.mean_weight
    out = {}
    for node in tree.fitness:
        sub = [norm[m] for m in tree.subtree(node)]
        own = (tree.self_score[node] + 1) / 2 if node in tree.self_score else norm[node]
        out[node] = w_best * max(sub) + w_mean * sum(sub) / len(sub) + (1 - w_best - w_mean) * own
    return out


def _expandable(cfg: BirdConfig, tree: Tree, node: str, taken: set[str]) -> bool:
    """The subtree of `node` holds a live leaf above tree.max_depth that is not taken yet."""
    return any(tree.alive[m] and not tree.children[m] and m not in taken and tree.depth(m) < cfg.tree.max_depth
               for m in tree.subtree(node))


def select_leaves(cfg: BirdConfig, state: SearchState, n: int, tree: Tree | None = None) -> list[str]:
    """Up to n distinct leaves, each found by descending from the root along the child with the largest
    V(c) + λ·sqrt(ln N(p) / N(c)) (N = nodes in a subtree, pending children counted as visits [ours]; λ annealed over
    the trained nodes); a leaf is a live node without children above tree.max_depth."""
    tree = tree or build_tree(cfg, state)
    values = node_values(cfg, tree)
    lam = uct_lambda(cfg, sum(tree.alive.values()))  # trainings so far: failed candidates train no policy
    pending: dict[str, int] = {}
    share = max(1, math.ceil(state.plan.n_candidates / max(1, n)))
    taken: list[str] = []
    for _ in range(n):
        node = ROOT
        while tree.children.get(node):
            kids = [c for c in tree.children[node] if _expandable(cfg, tree, c, set(taken))]
            if not kids:
                break
            visits = {c: len(tree.subtree(c)) + pending.get(c, 0) for c in kids}
            total = sum(visits.values()) + (1 if node != ROOT else 0)
            node = max(kids, key=lambda c: (values[c] + lam * math.sqrt(math.log(total) / visits[c]),
                                            -kids.index(c)))
        if node == ROOT or node in taken:
            break
        taken.append(node)
        walk = node
        while walk != ROOT:  # pending children count as visits along the path (virtual loss)
            pending[walk] = pending.get(walk, 0) + share
            walk = tree.parent[walk]
    return taken


@register("parent", "uct_leaf")
def _uct_leaf(cfg: BirdConfig, state: SearchState, rng: object, temperature: float) -> str | None:
    """The leaf UCT selects first (None while the tree is empty)."""
    leaves = select_leaves(cfg, state, 1)
    return leaves[0] if leaves else None


def rescale_counts(counts: dict[str, int], k: int) -> tuple[str, ...]:
    """Per-sample actions for k samples from per-expansion counts (largest remainder when k ≠ Σ counts; ties in the
    order given), grouped by action in the order given."""
    total = sum(counts.values())
    if total <= 0 or k <= 0:
        return ()
    exact = {a: c * k / total for a, c in counts.items()}
    alloc = {a: int(math.floor(v)) for a, v in exact.items()}
    order = sorted(counts, key=lambda a: (-(exact[a] - alloc[a]), list(counts).index(a)))
    for a in order[: k - sum(alloc.values())]:
        alloc[a] += 1
    return tuple(a for a in counts for _ in range(alloc[a]))


def _elite(cfg: BirdConfig, tree: Tree, exclude: str, rng: object) -> str | None:
    ranked = sorted((n for n in tree.fitness if tree.alive[n] and n != exclude), key=lambda n: -tree.fitness[n])
    pool = ranked[: cfg.tree.elite_size]
    return pool[rng.randrange(len(pool))] if pool else None  # type: ignore[attr-defined]


@register("sampling", "tree_actions")
def _tree_actions(cfg: BirdConfig, state: SearchState, k: int) -> list[SamplePlan]:
    """Root expansion (fresh samples) while the tree is empty; then tree.leaves_per_iteration leaves chosen by UCT,
    the plan's actions dealt out over them in order (crossover_elite's second parent: one of the tree.elite_size
    best nodes, uniformly [ours])."""
    import random

    tree = build_tree(cfg, state)
    leaves = select_leaves(cfg, state, cfg.tree.leaves_per_iteration, tree)
    actions = state.plan.actions[:k] or ("mutation_mechanism",) * k
    if not leaves:
        return [SamplePlan() for _ in range(k)]
    per = math.ceil(k / len(leaves))
    plans = []
    for i, action in enumerate(actions):
        leaf = leaves[min(i // per, len(leaves) - 1)]
        parents: tuple[str, ...] = (leaf,)
        if get("operator", action).n_parents > 1:
            mate = _elite(cfg, tree, leaf, random.Random(f"{state.seed}/{state.iteration}/elite/{i}"))
            parents = (leaf, mate) if mate else parents
        plans.append(SamplePlan(action, parents))
    return plans
