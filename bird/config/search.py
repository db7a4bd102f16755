"""Schema sections of the population and tree searches: islands (REvolve), the search tree (RF-Agent), programmatic
crossover and critic alignment (R*). Every field defaults to "off"; a method file switches them on."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["IslandsConfig", "TreeConfig", "CrossoverConfig", "AlignmentConfig"]


@dataclass
class IslandsConfig:
    """An island population (select.rule=island_lineage): children join their parent's island when admitted."""

    # islands the population is split into
    n_islands: int = 1
    # members kept per island (the weakest is dropped when an admitted child overflows it)
    population_size: int = 8
    # who enters an island: registry family admission
    admission: str = "above_island_mean"
    # admissions (over all islands) between two migrations; 0 = never migrate
    migration_interval: int = 0
    # fraction of an island's members (at least one) that each migration copies to the next island (a ring)
    migration_rate: float = 0.0


@dataclass
class TreeConfig:
    """A search tree of rewards (generate.sampling=tree_actions, generate.parent=uct_leaf)."""

    # expansions per iteration, by tree action (registry family operator); rescaled to the plan's K
    actions: dict[str, int] = field(default_factory=dict)
    # UCT exploration weight λ: annealed linearly from lambda0 to lambda_final over horizon_trainings trainings
    lambda0: float = 0.4
    lambda_final: float = 0.1
    horizon_trainings: int = 40
    # nodes at this depth are not expanded (root children have depth 1)
    max_depth: int = 16
    # crossover_elite draws its second parent from the best this-many nodes
    elite_size: int = 10
    # nodes of the root → leaf path shown in an expansion prompt (leaf included)
    path_window: int = 4
    # backup of a node's value when a descendant is inserted (bird/components/tree.py): q ← (1 − best − mean·decay)·q
    # + best·max(child q) + mean·decay·mean(backed-up fitness), decay = max(0, 1 − nodes / horizon_trainings)
    best_weight: float = 1.0
    mean_weight: float = 0.0
    # fitness a failed node counts with
    failure_value: float = 0.0


@dataclass
class CrossoverConfig:
    """Programmatic crossover children (no LLM call), generated next to the LLM's samples."""

    # children per iteration (taken out of K; rescaled to the plan's K)
    n: int = 0
    # registry family crossover: none | module_insert
    operator: str = "none"
    # how each parent is drawn: registry family parent
    parent: str = "softmax_fitness"
    # softmax temperature of the parent draw
    temperature: float = 1.0
    # a child that cannot be built or fails the checks is replaced by a child of another parent pair
    backfill_failures: bool = False
    # parent pairs tried per child slot when backfilling
    max_draws: int = 3


@dataclass
class AlignmentConfig:
    """Parameter alignment of each new reward on critic-labelled trajectory segments (generate stage)."""

    # registry family alignment: none | bradley_terry_segments
    method: str = "none"
    # who labels segment pairs: registry family segment_labeller
    labeller: str = "critic_population_vote"
    # LLM-written critic programs (authored once, when the trajectory store first has episodes)
    critics: int = 5
    # agreeing votes a pair needs, strictest first; the first rung that labels min_pairs pairs is used
    vote_ladder: list[int] = field(default_factory=lambda: [5, 4, 3])
    # labelled pairs a rung must reach
    min_pairs: int = 10
    # steps per segment (at least)
    min_segment_len: int = 5
    # segments cut from the trajectory store
    target_segments: int = 20
    # segment pairs shown to the critics
    max_pairs: int = 100
    # SPSA iterations of the Bradley–Terry fit
    iterations: int = 1000
    # share of labelled pairs fitted on; the rest decide whether the tuned values are kept
    train_fraction: float = 0.7
    # SPSA step on the log-scale of each literal
    learning_rate: float = 0.01
    # SPSA perturbation on the log-scale of each literal
    perturbation: float = 0.1
    # what the fit tunes: registry family tunable
    tunable: str = "float_literals"
