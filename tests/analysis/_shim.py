"""Make `import bird.analysis` work while pyproject.toml's package list does not install it.

`packages.find` discovers top-level `analysis`, so the `bird.analysis = analysis` package-dir entry is unused and
the editable install maps nothing to `bird.analysis`. This aliases the source folder under that name. It does
nothing once the package is installed properly (see the analysis report: list the packages explicitly).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ANALYSIS_DIR = Path(__file__).resolve().parents[2] / "analysis"


def ensure_bird_analysis() -> None:
    try:
        import bird.analysis  # noqa: F401
        return
    except ModuleNotFoundError:
        pass
    spec = importlib.util.spec_from_file_location("bird.analysis", ANALYSIS_DIR / "__init__.py",
                                                  submodule_search_locations=[str(ANALYSIS_DIR)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["bird.analysis"] = module
    spec.loader.exec_module(module)
    import bird

    bird.analysis = module


ensure_bird_analysis()
