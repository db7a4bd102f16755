"""Generic search components any method may switch on by config: demonstrations as a search input, positive-state
labelling (GRACE P0.1), demo fitness, softmax parent sampling, the trajectory store and its TPE screen, the feedback
formats built on them, task decomposition, the judge feedback format, subtask-prior encoders, the progress screen and
design thoughts; sample plans and LLM operators, island populations, the search tree, programmatic crossover,
critic-labelled parameter alignment and self-verification."""

from bird.components import (  # noqa: F401  (registers)
    alignment,
    critics,
    crossover,
    decompose,
    demo_fitness,
    demo_views,
    formats,
    goal_states,
    islands,
    judge,
    literals,
    operators,
    parents,
    priors,
    progress_screen,
    self_verify,
    thought,
    trajectories,
    tree,
)

__all__: list[str] = []
