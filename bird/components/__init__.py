"""Generic search components any method may switch on by config: demonstrations as a search input, positive-state
labelling (GRACE P0.1), demo fitness, softmax parent sampling, the trajectory store and its TPE screen, the feedback
formats built on them, task decomposition, the judge feedback format, subtask-prior encoders and the progress screen."""

from bird.components import (  # noqa: F401  (registers)
    decompose,
    demo_fitness,
    demo_views,
    formats,
    goal_states,
    judge,
    parents,
    priors,
    progress_screen,
    trajectories,
)

__all__: list[str] = []
