"""Checks of the population and tree search keys (bird/config/search.py) and of the suites a method's prompts are
written for; called by bird.config.validate.validate."""

from __future__ import annotations

from bird import registry
from bird.config.schema import BirdConfig

__all__ = ["check_search"]

def _numbers(cfg: BirdConfig, problems: list[str]) -> None:
    for key, value in (("generate.crossover_rate", cfg.generate.crossover_rate),
                       ("islands.migration_rate", cfg.islands.migration_rate),
                       ("alignment.train_fraction", cfg.alignment.train_fraction)):
        if not 0.0 <= value <= 1.0:
            problems.append(f"{key}={value}: must be in [0, 1]")
    for key, value in (("islands.n_islands", cfg.islands.n_islands),
                       ("islands.population_size", cfg.islands.population_size),
                       ("tree.horizon_trainings", cfg.tree.horizon_trainings), ("tree.max_depth", cfg.tree.max_depth),
                       ("tree.elite_size", cfg.tree.elite_size), ("tree.path_window", cfg.tree.path_window),
                       ("crossover.max_draws", cfg.crossover.max_draws),
                       ("alignment.min_segment_len", cfg.alignment.min_segment_len),
                       ("alignment.target_segments", cfg.alignment.target_segments),
                       ("alignment.max_pairs", cfg.alignment.max_pairs)):
        if value < 1:
            problems.append(f"{key}={value}: must be >= 1")
    for key, value in (("islands.migration_interval", cfg.islands.migration_interval),
                       ("crossover.n", cfg.crossover.n), ("alignment.critics", cfg.alignment.critics),
                       ("alignment.iterations", cfg.alignment.iterations), ("alignment.min_pairs", cfg.alignment.min_pairs)):
        if value < 0:
            problems.append(f"{key}={value}: must be >= 0")
    if cfg.tree.best_weight < 0 or cfg.tree.mean_weight < 0 or cfg.tree.best_weight + cfg.tree.mean_weight > 1:
        problems.append(f"tree.best_weight={cfg.tree.best_weight}, tree.mean_weight={cfg.tree.mean_weight}: must be "
                        ">= 0 with a sum <= 1 (the rest weighs the node's previous value)")
    for key, value in (("crossover.temperature", cfg.crossover.temperature),
                       ("alignment.learning_rate", cfg.alignment.learning_rate),
                       ("alignment.perturbation", cfg.alignment.perturbation)):
        if value <= 0:
            problems.append(f"{key}={value}: must be > 0")


def check_search(cfg: BirdConfig, problems: list[str]) -> None:
    """Append every problem with the search keys to `problems`."""
    operators = registry.names("operator")
    for action, count in cfg.tree.actions.items():
        if action not in operators:
            problems.append(f"tree.actions: {action!r} is not a registered operator; allowed: {operators}")
        elif count < 0:
            problems.append(f"tree.actions.{action}={count}: must be >= 0")
    if any(r < 1 for r in cfg.alignment.vote_ladder):
        problems.append(f"alignment.vote_ladder={list(cfg.alignment.vote_ladder)}: every rung must be >= 1")
    _numbers(cfg, problems)
    suite = cfg.env.id.partition("/")[0]
    if cfg.generate.suites and suite not in cfg.generate.suites:
        problems.append(f"env.id={cfg.env.id!r}: method {cfg.method!r} is written for suites {list(cfg.generate.suites)} "
                        f"(generate.suites); its prompts do not describe a {suite} task")
