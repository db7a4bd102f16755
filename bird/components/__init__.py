"""Generic search components any method may switch on by config: demonstrations as a search input, demo fitness,
softmax parent sampling, the trajectory store and its TPE screen, the feedback formats built on them, task
decomposition, the judge feedback format, subtask-prior encoders, the progress screen, design thoughts and candidate schedules."""

from bird.components import (  # noqa: F401  (registers)
    decompose,
    demo_fitness,
    demo_views,
    formats,
    judge,
    parents,
    priors,
    progress_screen,
    schedule,
    thought,
    trajectories,
)

__all__: list[str] = []
