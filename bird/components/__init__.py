"""Generic search components any method may switch on by config: demonstrations as a search input, positive-state
labelling (GRACE P0.1), demo fitness, softmax parent sampling, the trajectory store and its TPE screen, the feedback
formats built on them, task decomposition, the judge feedback format, subtask-prior encoders, the progress screen,
design thoughts, candidate schedules, subtask lists, judge scores and summarised feedback."""

from bird.components import (  # noqa: F401  (registers)
    context,
    decompose,
    demo_fitness,
    demo_margin,
    demo_views,
    formats,
    goal_states,
    judge,
    judgement,
    parents,
    priors,
    progress_screen,
    schedule,
    subtask_feedback,
    subtasks,
    summary,
    thought,
    trajectories,
)

__all__: list[str] = []
