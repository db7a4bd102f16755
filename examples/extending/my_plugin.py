"""A selection rule from outside bird (docs/extending.md): of the iteration's candidates whose fitness is near the
best, carry forward the one with the shortest reward program (a simpler reward that scores almost as well is easier
to read, and gives a policy fewer terms to exploit).

Use it on any method with `plugins=[my_plugin] select.rule=shortest_near_best`, from this folder (or with it on
PYTHONPATH); method/my_method.yaml names it itself.
"""

from bird.config.schema import BirdConfig
from bird.registry import register
from bird.state import SearchState
from bird.types import Candidate, Report

# "near the best": within this fraction of the iteration's fitness range below the best
TOLERANCE = 0.05


@register("select", "shortest_near_best")
def shortest_near_best(cfg: BirdConfig, state: SearchState, cands: list[Candidate],
                       reports: dict[str, Report]) -> str | None:
    """The shortest program (in lines) among the candidates within TOLERANCE of the best fitness (of the range
    between the worst and the best); ties go to the first index; None when nothing was ranked."""
    ranked = [c for c in cands if c.id in reports and reports[c.id].fitness is not None]
    if not ranked:
        return None
    fitness = {c.id: float(reports[c.id].fitness) for c in ranked}  # type: ignore[arg-type]
    best, worst = max(fitness.values()), min(fitness.values())
    near = [c for c in ranked if fitness[c.id] >= best - TOLERANCE * (best - worst)]
    return min(near, key=lambda c: len((c.code or "").splitlines())).id
