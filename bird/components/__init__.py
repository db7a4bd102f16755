"""Generic search components any method may switch on by config: demonstrations as a search input, positive-state
labelling (GRACE P0.1), demo fitness, softmax parent sampling, the trajectory store and its TPE screen, the feedback
formats built on them, task decomposition, the judge feedback format, subtask-prior encoders, the progress screen,
design thoughts, candidate schedules, subtask lists, judge scores and summarised feedback; sample plans and LLM
operators, island populations, the search tree, programmatic crossover, critic-labelled parameter alignment and
self-verification."""

from bird.components import (  # noqa: F401  (registers)
    alignment,
    context,
    critics,
    crossover,
    decompose,
    demo_fitness,
    demo_margin,
    demo_views,
    digest_feedback,
    fitness,
    formats,
    goal_states,
    islands,
    judge,
    judgement,
    literals,
    operators,
    parents,
    priors,
    progress_screen,
    schedule,
    screens,
    self_verify,
    subtask_feedback,
    subtasks,
    summary,
    thought,
    trajectories,
    tree,
)

__all__: list[str] = []
