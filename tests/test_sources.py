"""Nothing in the project names a path outside it: no citation of a notes folder a user of the package does not have
(papers and releases are cited by title, arXiv id and section, or as owner/repo@commit:path), no absolute path of the
machine it was developed on, and no markdown link that leaves the checkout."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"\.\./shared|/work/(?:main|wt|shared)\b|\bshared/(?:papers|methods)\b|\b(?:bird_release|card_eureka|"
                     r"regot_prm4rl|DESIGN|STYLE)\.md\b|\bmethods/(?!README\.md)\w+\.md\b|\bpapers/\w+\.txt\b")
LINK = re.compile(r"\]\(([^)#\s]+)")


def _files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    return [ROOT / f for f in out if (ROOT / f).is_file()]


def outside_references(path: Path, text: str) -> list[str]:
    """Every reference in `text` (the contents of `path`) to a path outside the checkout."""
    found = [m.group(0) for m in OUTSIDE.finditer(text)]
    if path.suffix == ".md":
        for target in LINK.findall(text):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (path.parent / target).resolve()
            if ROOT not in resolved.parents and resolved != ROOT:
                found.append(target)
    return found


def test_no_file_names_a_path_outside_the_project():
    bad = {}
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary
        if path == Path(__file__):
            continue
        refs = outside_references(path, text)
        if refs:
            bad[str(path.relative_to(ROOT))] = sorted(set(refs))
    assert not bad, bad


def test_the_check_catches_notes_paths_absolute_paths_and_escaping_links():
    """Positive control: the old citations are caught."""
    md = ROOT / "methods" / "rda" / "README.md"
    for text in ("values from `../shared/methods/bird_release.md` §2.2", "papers/bird.txt Table 9",
                 "Citations (/work/shared/papers/bird.txt)", "cwd: /work/main", "see [notes](../../../shared/x.md)",
                 "(methods/analysis.md §1)"):
        assert outside_references(md, text), text
    assert not outside_references(md, "safety-research/bird@54a9ce3:configs/methods/rda.yaml; [conf](../../conf/)")
    assert not outside_references(md, "the methods' index: methods/README.md")
