"""Schema sections of the population and tree searches: islands (REvolve), the search tree (RF-Agent), programmatic
crossover and critic alignment (R*). Every field defaults to "off"; a method file switches them on."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["IslandsConfig", "TreeConfig", "CrossoverConfig", "AlignmentConfig"]


@dataclass
class IslandsConfig:
    """An island population (select.rule=island_lineage): children join their parent's island when admitted."""

    n_islands: int = 1
    """islands the population is split into"""
    population_size: int = 8
    """members kept per island (the weakest is dropped when an admitted child overflows it)"""
    admission: str = "above_island_mean"
    """who enters an island: registry family admission"""
    migration_interval: int = 0
    """admissions (over all islands) between two migrations; 0 = never migrate"""
    migration_rate: float = 0.0
    """fraction of an island's members (at least one) that each
    migration copies to the next island (a ring)"""


@dataclass
class TreeConfig:
    """A search tree of rewards (generate.sampling=tree_actions, generate.parent=uct_leaf)."""

    actions: dict[str, int] = field(default_factory=dict)
    """expansions per iteration, by tree action (registry family operator); rescaled to the plan's K"""
    lambda0: float = 0.4
    """UCT exploration weight λ at the start, annealed linearly to lambda_final over horizon_trainings
    trainings"""
    lambda_final: float = 0.1
    """UCT exploration weight λ at the end of the anneal"""
    horizon_trainings: int = 40
    """trainings over which λ is annealed (and the backup's decay runs out)"""
    max_depth: int = 16
    """nodes at this depth are not expanded (root children have depth 1)"""
    elite_size: int = 10
    """crossover_elite draws its second parent from the best this-many nodes"""
    path_window: int = 4
    """nodes of the root → leaf path shown in an expansion prompt (leaf included)"""
    best_weight: float = 1.0
    """backup of a node's value when a descendant is inserted (bird/components/tree.py): q ← (1 − best −
    mean·decay)·q + best·max(child q) + mean·decay·mean(backed-up fitness), decay = max(0, 1 − nodes /
    horizon_trainings); this is `best`"""
    mean_weight: float = 0.0
    """`mean` of the backup above: the weight of the backed-up fitness's mean"""
    failure_value: float = 0.0
    """fitness a failed node counts with"""


@dataclass
class CrossoverConfig:
    """Programmatic crossover children (no LLM call), generated next to the LLM's samples."""

    n: int = 0
    """children per iteration (taken out of K; rescaled to the plan's K)"""
    operator: str = "none"
    """registry family crossover: none | module_insert"""
    parent: str = "softmax_fitness"
    """how each parent is drawn: registry family parent"""
    temperature: float = 1.0
    """softmax temperature of the parent draw"""
    backfill_failures: bool = False
    """a child that cannot be built or fails the checks is replaced by a child of another parent pair"""
    max_draws: int = 3
    """parent pairs tried per child slot when backfilling"""


@dataclass
class AlignmentConfig:
    """Parameter alignment of each new reward on critic-labelled trajectory segments (generate stage)."""

    method: str = "none"
    """registry family alignment: none | bradley_terry_segments"""
    labeller: str = "critic_population_vote"
    """who labels segment pairs: registry family segment_labeller"""
    critics: int = 5
    """LLM-written critic programs (authored once, when the trajectory store first has episodes)"""
    vote_ladder: list[int] = field(default_factory=lambda: [5, 4, 3])
    """agreeing votes a pair needs, strictest first; the first rung that labels min_pairs pairs is used"""
    min_pairs: int = 10
    """labelled pairs a rung must reach"""
    min_segment_len: int = 5
    """steps per segment (at least)"""
    target_segments: int = 20
    """segments cut from the trajectory store"""
    max_pairs: int = 100
    """segment pairs shown to the critics"""
    iterations: int = 1000
    """SPSA iterations of the Bradley–Terry fit"""
    train_fraction: float = 0.7
    """share of labelled pairs fitted on; the rest decide whether the tuned values are kept"""
    learning_rate: float = 0.01
    """SPSA step on the log-scale of each literal"""
    perturbation: float = 0.1
    """SPSA perturbation on the log-scale of each literal"""
    tunable: str = "float_literals"
    """what the fit tunes: registry family tunable"""
