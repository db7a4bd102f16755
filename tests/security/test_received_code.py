"""What bird reads back from a run directory or a store is data, never code (issue 42): a checkpoint is JSON that
rebuilds only bird's registered record types, a pickled checkpoint of an earlier bird is refused unless the user
vouches for it (`--trust-pickles`), and a compiled program in the JAX store loads only when sealed under this
user's key. Each attack has its positive control: one's own checkpoint (and one's own old pickle) resumes to the
uninterrupted result, one's own stored program is found."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import stat
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bird import checkpoint, loop
from bird.learners.jax_executables import StoredPrograms
from bird.resume import main as resume_main
from bird.sealed import key_path
from bird.state_codec import CodecError, decode


class _Payload:
    """What a stranger pickles: unpickling it calls open(marker, "w") (any callable would do)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


def _run_dir(root: Path, cfg) -> Path:
    root.mkdir()
    (root / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.structured(cfg)))
    return root


def test_resuming_a_received_pickle_checkpoint_runs_none_of_its_code(compose_cfg, tmp_path, capsys):
    cfg = compose_cfg()
    run = _run_dir(tmp_path / "received", cfg)
    marker = tmp_path / "code-ran"
    (run / checkpoint.PICKLE_NAME).write_bytes(pickle.dumps(_Payload(marker)))
    assert resume_main([str(run)]) == 2
    err = capsys.readouterr().err
    assert "pickle" in err and "--trust-pickles" in err and "run.resume=false" in err
    with pytest.raises(checkpoint.CheckpointError, match="--trust-pickles"):  # the re-run of the same command
        loop._resumable_or_cleared(cfg, run)
    assert not marker.exists()
    assert (run / checkpoint.PICKLE_NAME).exists()  # refused, not deleted: the user decides


def test_a_json_checkpoint_names_no_type_bird_does_not_save(compose_cfg, tmp_path):
    cfg = compose_cfg()
    run = _run_dir(tmp_path / "received", cfg)
    doc = {"bird_checkpoint": 2, "config_hash": checkpoint.config_hash(cfg), "iteration": 1,
           "saved": {"$": "object", "type": "subprocess.Popen", "fields": {"args": ["touch", str(tmp_path / "x")]}}}
    (run / checkpoint.CHECKPOINT_NAME).write_text(json.dumps(doc))
    with pytest.raises(checkpoint.CheckpointError, match="'subprocess.Popen' is not one bird saves"):
        checkpoint.load(run, cfg)
    for bad in ({"$": "array", "dtype": "|O", "shape": [1], "order": "C", "b64": "AAAAAAAAAAA="},
                {"$": "object", "type": "bird.types.Failure", "fields": {"__class__": 1}},
                {"$": "enum", "type": "builtins.type", "value": 1}):
        with pytest.raises(CodecError):
            decode(bad)
    assert not (tmp_path / "x").exists()


def _as_old_pickle(run: Path) -> None:
    """Rewrite `run`'s checkpoint as the pickle an earlier bird wrote (SavedSearch, format 1)."""
    saved = decode(json.loads((run / checkpoint.CHECKPOINT_NAME).read_text())["saved"])
    saved.format = 1
    (run / checkpoint.PICKLE_NAME).write_bytes(pickle.dumps(saved))
    (run / checkpoint.CHECKPOINT_NAME).unlink()


@pytest.mark.slow
def test_ones_own_pickle_checkpoint_converts_under_trust_pickles_and_resumes_to_the_uninterrupted_result(
        method_smoke_run, tmp_path, capsys):
    from run_kills import killed_copy_of

    from bird.bundle.compare import compare_runs, read_run

    clean, _ = method_smoke_run("eureka")
    run = tmp_path / "run"
    shutil.copytree(killed_copy_of(clean), run)
    _as_old_pickle(run)
    mine = "verify.call_timeout_s=60"  # the smoke search's own limit, given again (a received config sets none)
    assert resume_main([str(run), mine]) == 2 and "--trust-pickles" in capsys.readouterr().err
    assert resume_main([str(run), mine, "--trust-pickles"]) == 0
    assert "converted" in capsys.readouterr().err
    assert not (run / checkpoint.PICKLE_NAME).exists() and not (run / checkpoint.CHECKPOINT_NAME).exists()
    comparison = compare_runs(read_run(clean), read_run(run))
    assert comparison.identical, [str(d) for d in comparison.differences][:10]


# -- the compiled-program store -----------------------------------------------------------------------------------
def test_a_planted_program_that_hashes_its_own_bytes_is_not_loaded(tmp_path):
    stored = StoredPrograms(tmp_path, {})
    stored.put("k", b"the user's program")
    assert stored.get("k") == b"the user's program"  # positive control
    planted = b"cos\nsystem\n(S'touch /tmp/x'\ntR."  # what the trainer would unpickle
    stored.path("k").write_bytes(hashlib.sha256(planted).digest() + planted)  # the store's former self-check
    assert stored.get("k") is None


def test_a_program_sealed_under_another_users_key_is_not_loaded(tmp_path):
    theirs, ours = StoredPrograms(tmp_path / "theirs", {}), StoredPrograms(tmp_path / "ours", {})
    theirs.put("k", b"their program")
    ours.put("other", b"x")  # our key exists
    ours.path("k").write_bytes(theirs.path("k").read_bytes())  # a copied cache
    assert ours.get("k") is None


@pytest.mark.parametrize("how", ["readable by others", "a link", "short"])
def test_a_key_file_that_others_could_have_made_or_read_is_not_used(tmp_path, how):
    stored = StoredPrograms(tmp_path / "store", {})
    stored.put("k", b"program")
    key = key_path(tmp_path / "store")
    if how == "readable by others":
        key.chmod(0o644)
    elif how == "a link":
        (tmp_path / "elsewhere.key").write_bytes(key.read_bytes())
        (tmp_path / "elsewhere.key").chmod(0o600)
        key.unlink()
        key.symlink_to(tmp_path / "elsewhere.key")
    else:
        key.write_bytes(b"short")
    assert stored.get("k") is None
    before = sorted(p.name for p in (tmp_path / "store").iterdir())
    stored.put("k2", b"program")  # nothing is added under a key it cannot trust
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == before


def test_a_new_key_is_private_to_its_user(tmp_path):
    StoredPrograms(tmp_path, {}).put("k", b"program")
    st = os.lstat(key_path(tmp_path))
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
