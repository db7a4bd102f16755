import warnings
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "analysis" / "notebooks" / "leaderboard.ipynb"


def test_leaderboard_notebook_runs_on_the_recorded_smoke_runs(smoke_runs, tmp_path, monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # the kernel inherits the environment, so these select the fixture sweep and small bootstrap sizes
    monkeypatch.setenv("BIRD_RUNS", str(smoke_runs))
    monkeypatch.setenv("BIRD_REPORT_OUT", str(tmp_path / "out"))
    monkeypatch.setenv("BIRD_N_RESAMPLES", "300")
    monkeypatch.setenv("BIRD_BT_RESAMPLES", "30")
    monkeypatch.setenv("BIRD_CURVE_RESAMPLES", "100")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert (tmp_path / "out" / "leaderboard.md").is_file()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "4 runs" in text and "strongly connected" in text
