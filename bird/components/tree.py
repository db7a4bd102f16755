"""A search tree of rewards (RF-Agent), as BIRD's release runs it: nodes are candidates, edges parent → child; each
iteration UCT descends from a virtual root to one leaf and the tree actions (registry family operator) write all of
its children; each new node's fitness is backed up its path.

The tree is rebuilt from the candidates themselves, replayed in the order they were made (a candidate made by a tree
action hangs under its parent; the first iteration's samples hang under the root), so it needs no state beyond the
search's candidates, reports and self-verify ratings (safety-research/bird@54a9ce3:bird/components/tree.py,
`topo_search_tree`, `parent_uct_leaf`).

Backup, for every ancestor a below the root when a node of fitness s is inserted as the t-th node:
    a.visits += 1;  a.total += s;  decay = max(0, 1 − t / tree.horizon_trainings)
    a.q = (1 − η − μ·decay)·a.q + η·max(child q) + μ·decay·(a.total / a.visits)
with η = tree.best_weight and μ = tree.mean_weight. UCT of a child c of p:
    (q_c − Q_min)/(Q_max − Q_min + 1e-8) + λ·sqrt(2 ln(N_p + 1) / N_c) + λ·softmax_siblings(self-verify)_c
with Q_min/Q_max over every node's fitness and 0, N = visits (the node and everything inserted below it), a node
never rated counting as −1 in the softmax, and λ annealed from tree.lambda0 to tree.lambda_final over the nodes so far."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from bird.components.operators import SamplePlan
from bird.config.schema import BirdConfig
from bird.registry import get, register
from bird.state import SearchState

__all__ = ["Tree", "Node", "build_tree", "uct_lambda", "select_leaf", "uct_scores", "rescale_counts"]

ROOT = "<root>"
_EPS = 1e-8
_UNRATED = -1.0  # the release's initial self-verify score of a node never rated


@dataclass
class Node:
    parent: str | None
    depth: int
    score: float = 0.0  # the node's own fitness (failure: tree.failure_value)
    q: float = 0.0  # backed-up value
    visits: int = 1
    total: float = 0.0
    self_verify: float | None = None
    children: list[str] = field(default_factory=list)


@dataclass
class Tree:
    """Every node (ROOT included), in insertion order."""

    nodes: dict[str, Node]

    @property
    def size(self) -> int:
        """Nodes that are rewards (the root excluded): the trainings so far, failures included."""
        return len(self.nodes) - 1

    def q_bounds(self) -> tuple[float, float]:
        scores = [n.score for cid, n in self.nodes.items() if cid != ROOT]
        return min([0.0, *scores]), max([0.0, *scores])


def _insert(cfg: BirdConfig, tree: Tree, cid: str, parent: str, score: float, self_verify: float | None) -> None:
    up = tree.nodes[parent]
    tree.nodes[cid] = Node(parent, up.depth + 1, score, score, 1, score, self_verify)
    up.children.append(cid)
    t = tree.size
    decay = max(0.0, 1.0 - t / cfg.tree.horizon_trainings)
    eta, mu = cfg.tree.best_weight, cfg.tree.mean_weight * decay
    node = up
    while node.parent is not None:
        node.visits += 1
        node.total += score
        best = max(tree.nodes[c].q for c in node.children)
        node.q = (1.0 - eta - mu) * node.q + eta * best + mu * node.total / node.visits
        node = tree.nodes[node.parent]
    node.visits += 1  # the root only counts visits


def build_tree(cfg: BirdConfig, state: SearchState) -> Tree:
    """The tree of every finished candidate, inserted in the order they were made (a failed one at
    tree.failure_value)."""
    tree = Tree({ROOT: Node(None, 0, visits=0)})
    for cid, cand in state.candidates.items():
        if cid in tree.nodes:
            continue
        parent = cand.parent_id if cand.parent_id in tree.nodes else ROOT
        f = state.fitness(cid)
        score = f if f is not None and cand.alive else cfg.tree.failure_value
        _insert(cfg, tree, cid, parent, score, state.self_verify.get(cid))
    return tree


def uct_lambda(cfg: BirdConfig, nodes: int) -> float:
    """λ = (λ0 − λ_final)·(1 − t/N) + λ_final after t nodes (N = tree.horizon_trainings; not clamped, as the release)."""
    t = cfg.tree
    return (t.lambda0 - t.lambda_final) * (1.0 - max(0, nodes) / t.horizon_trainings) + t.lambda_final


def _softmax(values: list[float]) -> list[float]:
    top = max(values)
    exps = [math.exp(v - top) for v in values]
    return [e / sum(exps) for e in exps]


def uct_scores(cfg: BirdConfig, tree: Tree, parent: str) -> dict[str, float]:
    """The UCT score of each child of `parent` (the self-verify term only when feedback.self_verify is on)."""
    kids = tree.nodes[parent].children
    lam = uct_lambda(cfg, tree.size)
    lo, hi = tree.q_bounds()
    n_parent = tree.nodes[parent].visits
    verify = (_softmax([_UNRATED if tree.nodes[c].self_verify is None else tree.nodes[c].self_verify for c in kids])
              if cfg.feedback.self_verify else [0.0] * len(kids))
    return {c: (tree.nodes[c].q - lo) / (hi - lo + _EPS)
            + lam * math.sqrt(2.0 * math.log(n_parent + 1) / max(tree.nodes[c].visits, 1)) + lam * v
            for c, v in zip(kids, verify, strict=True)}


def select_leaf(cfg: BirdConfig, state: SearchState, tree: Tree | None = None) -> str | None:
    """Descend from the root along the highest-UCT child (ties: the earliest) until a node without children or at
    tree.max_depth; None while the tree is empty."""
    tree = tree or build_tree(cfg, state)
    node = ROOT
    while tree.nodes[node].children and tree.nodes[node].depth < cfg.tree.max_depth:
        scores = uct_scores(cfg, tree, node)
        node = max(scores, key=lambda c: (scores[c], -tree.nodes[node].children.index(c)))
    return None if node == ROOT else node


@register("parent", "uct_leaf")
def _uct_leaf(cfg: BirdConfig, state: SearchState, rng: object, temperature: float) -> str | None:
    """The node UCT selects (None while the tree is empty)."""
    return select_leaf(cfg, state)


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


def _elite(cfg: BirdConfig, tree: Tree, exclude: str, rng: random.Random) -> str | None:
    """One of the tree.elite_size best nodes (ties: the earlier), drawn with weight 1/(rank + 2) as the release's
    crossover_elite draws its elites; never `exclude` [ours]."""
    ranked = sorted((c for c in tree.nodes if c != ROOT), key=lambda c: -tree.nodes[c].score)  # stable: insertion
    pool = [c for c in ranked[: cfg.tree.elite_size] if c != exclude]
    if not pool:
        return None
    return rng.choices(pool, weights=[1.0 / (r + 2) for r in range(len(pool))])[0]


@register("sampling", "tree_actions")
def _tree_actions(cfg: BirdConfig, state: SearchState, k: int) -> list[SamplePlan]:
    """Root expansion (fresh samples) while the tree is empty; then every action of the plan expands the one leaf UCT
    selects (crossover_elite's second parent: an elite, see `_elite`)."""
    tree = build_tree(cfg, state)
    leaf = select_leaf(cfg, state, tree)
    if leaf is None:
        return [SamplePlan() for _ in range(k)]
    plans = []
    for i, action in enumerate(state.plan.actions[:k] or ("mutation_mechanism",) * k):
        parents: tuple[str, ...] = (leaf,)
        if get("operator", action).n_parents > 1:
            mate = _elite(cfg, tree, leaf, random.Random(f"{state.seed}/{state.iteration}/elite/{i}"))
            parents = (leaf, mate) if mate else parents
        plans.append(SamplePlan(action, parents))
    return plans
