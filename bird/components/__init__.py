"""Generic search components any method may switch on by config: demonstrations as a search input, demo fitness,
softmax parent sampling, the trajectory store and its TPE screen, and the feedback formats built on them."""

from bird.components import demo_fitness, demo_views, formats, parents, trajectories  # noqa: F401  (registers)

__all__: list[str] = []
