"""`verify`: a bundle's hashes, completeness and schema version, and what each of its cells can reproduce."""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bird.bundle.archive import MANIFEST, MEMBER_LIMIT, BundleError, read_member, stream_member
from bird.bundle.reader import Bundle
from bird.bundle.transcript import answer_ok, key_problem
from bird.environment import describe_environment, same_machine
from bird.files import loads

__all__ = ["verify", "VerifyReport", "REQUIRED_RUN_FILES"]

REQUIRED_RUN_FILES = ("config.yaml", "result.json", "task.json", "status.json", "llm_calls.jsonl")
# what a transcript line of an unexpected shape raises in the answer and key checks: reported, never raised
_MALFORMED = (TypeError, ValueError, KeyError, AttributeError, IndexError)


@dataclass
class VerifyReport:
    path: Path
    schema_version: int | None = None
    problems: list[str] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)  # {id, replay, expect, why}

    @property
    def ok(self) -> bool:
        return not self.problems

    def render(self) -> str:
        lines = [f"{self.path}: schema_version {self.schema_version}, {len(self.cells)} cell(s)"]
        lines += [f"  PROBLEM {p}" for p in self.problems]
        for c in self.cells:
            lines.append(f"  {c['id']}: {c['replay']}" + (f" ({c['why']})" if c.get("why") else ""))
        lines.append("verified: every file matches the manifest" if self.ok else
                     f"FAILED: {len(self.problems)} problem(s)")
        return "\n".join(lines)


def _kept(name: str) -> bool:
    """Members verify reads again after hashing them: transcripts and environment records."""
    return name.startswith("transcripts/") or name.endswith("/environment.json")


def _reason(bundle: Bundle, exc: BundleError) -> str:
    """What a BundleError about `bundle` says, without the bundle's path in front (a path may hold ": " itself)."""
    return str(exc).removeprefix(f"{bundle.path}: ")


def _check_files(bundle: Bundle, report: VerifyReport) -> dict[str, bytes]:
    """Every listed file present with its size and hash; nothing unlisted. Each member's uncompressed size is
    checked against the manifest before it is read, then it is hashed as it streams. Returns the intact members
    verify reads again (_kept)."""
    listed = bundle.files
    report.problems += bundle.manifest_problems
    intact: dict[str, bytes] = {}
    with zipfile.ZipFile(bundle.path) as zf:
        present = {info.filename: info for info in zf.infolist() if info.filename != MANIFEST}
        for name in sorted(set(present) - set(listed)):
            report.problems.append(f"{name}: in the archive but not in the manifest")
        for name, entry in sorted(listed.items()):
            if name not in present:
                report.problems.append(f"{name}: listed in the manifest but missing")
                continue
            if present[name].file_size != entry["size"]:
                report.problems.append(f"{name}: content differs from its manifest hash (edited or corrupt: "
                                       f"{present[name].file_size} bytes uncompressed, the manifest says "
                                       f"{entry['size']}; not read)")
                continue
            digest, chunks, keep = hashlib.sha256(), [], _kept(name) and entry["size"] <= MEMBER_LIMIT
            try:
                for chunk in stream_member(zf, bundle.path, name, entry["size"]):
                    digest.update(chunk)
                    if keep:
                        chunks.append(chunk)
            except BundleError as exc:
                report.problems.append(f"{name}: cannot be read ({_reason(bundle, exc)})")
                continue
            if digest.hexdigest() != entry["sha256"]:
                report.problems.append(f"{name}: content differs from its manifest hash (edited or corrupt)")
                continue
            if keep:
                intact[name] = b"".join(chunks)
    return intact


def _check_transcript(bundle: Bundle, cell: str, data: bytes | None, report: VerifyReport) -> None:
    """Each answer against the index's hash, each text-only request against its key: names the edited request."""
    name = f"transcripts/{cell}.jsonl"
    try:
        text = (data if data is not None else read_member(bundle.path, name)).decode()
        lines = [loads(ln) for ln in text.splitlines() if ln.strip()]
    except BundleError as exc:  # (a ValueError too)
        if name in bundle.names:  # a missing transcript is already reported
            report.problems.append(f"{name}: not checked line by line ({_reason(bundle, exc)})")
        return
    except ValueError as exc:  # not UTF-8, not JSON, beyond bird's bounds
        report.problems.append(f"{name}: not JSON lines ({str(exc)[:200]})")
        return
    try:
        index = bundle.table("llm_calls")
        recorded = {(r.cell, int(r.seq)): r.response_sha256 for r in index.itertuples()}
    except (BundleError, OSError, ValueError, AttributeError, TypeError):
        recorded = {}
    for n, line in enumerate(lines, 1):
        if not isinstance(line, dict):
            report.problems.append(f"{name} line {n}: not a JSON object")
            continue
        where = (f"{name} line {n} (call #{line.get('seq')}, key {str(line.get('key'))[:16]}..., "
                 f"purpose {str(line.get('purpose'))[:40]}, iteration {str(line.get('iteration'))[:12]})")
        try:
            answered = answer_ok(line) and recorded.get((cell, line.get("seq")), line.get("response_sha256")) \
                == line.get("response_sha256")
            problem = key_problem(line)
        except _MALFORMED as exc:
            report.problems.append(f"{where}: malformed ({type(exc).__name__}: {str(exc)[:120]})")
            continue
        if not answered:
            report.problems.append(f"{where}: the answer differs from the one recorded")
        if problem is not None:
            report.problems.append(f"{where}: {problem}")


def _expectation(cell: dict[str, Any], recorded_env: dict[str, Any] | None, here: dict[str, Any]) -> tuple[str, str]:
    """What replaying the cell on this machine gives: bit-for-bit, or within tolerance, and why."""
    det = cell.get("determinism") if isinstance(cell.get("determinism"), dict) else {}
    if det.get("sources"):
        sources = det["sources"] if isinstance(det["sources"], list) else [det["sources"]]
        return "within tolerance", "; ".join(map(str, sources))
    if recorded_env is None:
        return "within tolerance", "the run recorded no environment.json (bit-for-bit not checkable)"
    diffs = same_machine(recorded_env, here)
    if diffs:
        return "within tolerance", "this machine differs from the recording one: " + "; ".join(diffs[:4])
    return "bit-for-bit", "deterministic learners on the same CPU and packages"


def _recorded_environment(intact: dict[str, bytes], name: str, report: VerifyReport) -> dict[str, Any] | None:
    """The last session of an intact environment.json; a malformed one is a problem."""
    if name not in intact:
        return None
    try:
        sessions = loads(intact[name]).get("sessions") or [None]
        if not isinstance(sessions, list) or not isinstance(sessions[-1], dict | None):
            raise TypeError("sessions is not a list of objects")
        return sessions[-1]
    except (ValueError, AttributeError, TypeError) as exc:
        report.problems.append(f"{name}: malformed ({str(exc)[:200]})")
        return None


def verify(path: str | Path) -> VerifyReport:
    """Check a bundle; never raises for a bad bundle (the report lists the problems) except when it is no bundle."""
    bundle = Bundle(path)
    report = VerifyReport(Path(path), bundle.manifest.get("schema_version"))
    intact = _check_files(bundle, report)
    here = describe_environment()
    for cell in bundle.cells:
        cid = cell["id"]
        missing = [f for f in REQUIRED_RUN_FILES if f"runs/{cid}/{f}" not in bundle.names]
        if missing:
            report.problems.append(f"runs/{cid}: missing {', '.join(missing)}")
        if f"transcripts/{cid}.jsonl" not in bundle.names:
            report.problems.append(f"transcripts/{cid}.jsonl: missing")
        _check_transcript(bundle, cid, intact.get(f"transcripts/{cid}.jsonl"), report)
        recorded_env = _recorded_environment(intact, f"runs/{cid}/environment.json", report)
        if not cell.get("replayable"):
            report.cells.append({"id": cid, "replay": "cannot replay", "why": str(cell.get("why_not"))[:300]})
            continue
        try:
            expect, why = _expectation(cell, recorded_env, here)
        except _MALFORMED as exc:
            report.problems.append(f"runs/{cid}/environment.json: malformed ({type(exc).__name__}: {str(exc)[:120]})")
            expect, why = "within tolerance", "the recorded environment is malformed"
        transcript = cell.get("transcript") if isinstance(cell.get("transcript"), dict) else {}
        n = transcript.get("answers", 0) if isinstance(transcript.get("answers", 0), int) else 0
        source = f"{n} recorded answer(s)" if n else "a deterministic generator (no answers needed)"
        report.cells.append({"id": cid, "replay": f"replays from {source}; results {expect}", "expect": expect,
                             "why": why})
    return report
