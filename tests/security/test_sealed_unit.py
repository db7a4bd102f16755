"""bird/sealed.py: the HMAC seal of files bird loads as code later, and the key it trusts (the store that uses it:
tests/security/test_received_code.py)."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import stat

import pytest

from bird import sealed
from bird.sealed import TAG_BYTES, key_path, seal, unseal


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(sealed, "_WARNED", set())


def test_a_sealed_blob_is_the_hmac_of_domain_label_and_data_then_the_data(tmp_path):
    blob = seal(tmp_path, "prog.bin", b"data")
    key = key_path(tmp_path).read_bytes()
    assert len(key) == 32 and TAG_BYTES == 32
    assert blob == hmac.new(key, b"bird-sealed-v1\0prog.bin\0data", hashlib.sha256).digest() + b"data"
    assert unseal(tmp_path, "prog.bin", blob) == b"data"


def test_the_key_is_made_once_and_kept(tmp_path):
    seal(tmp_path / "store", "a", b"1")
    key = key_path(tmp_path / "store").read_bytes()
    seal(tmp_path / "store", "b", b"2")
    assert key_path(tmp_path / "store").read_bytes() == key
    assert key_path(tmp_path) == tmp_path / f"store-{os.geteuid()}.key"
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == [key_path(tmp_path).name]  # no temporary file


def test_another_label_an_altered_blob_or_a_short_one_is_refused(tmp_path):
    blob = seal(tmp_path, "a", b"data")
    assert unseal(tmp_path, "b", blob) is None
    assert unseal(tmp_path, "a", blob[:-1] + b"x") is None
    assert unseal(tmp_path, "a", bytes([blob[0] ^ 1]) + blob[1:]) is None
    assert unseal(tmp_path, "a", blob[:TAG_BYTES - 1]) is None
    empty = seal(tmp_path, "e", b"")
    assert len(empty) == TAG_BYTES and unseal(tmp_path, "e", empty) == b""


def test_unsealing_without_a_key_makes_none(tmp_path):
    assert unseal(tmp_path, "a", b"x" * 64) is None
    assert not key_path(tmp_path).exists()


def test_a_key_racing_in_between_wins(tmp_path, monkeypatch):
    theirs = os.urandom(32)
    real_link = os.link

    def racing_link(src, dst):
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, theirs)
        os.close(fd)
        return real_link(src, dst)

    monkeypatch.setattr(os, "link", racing_link)
    blob = seal(tmp_path, "a", b"data")
    assert key_path(tmp_path).read_bytes() == theirs and blob[:TAG_BYTES] == hmac.new(
        theirs, b"bird-sealed-v1\0a\0data", hashlib.sha256).digest()
    assert sorted(p.name for p in tmp_path.iterdir()) == [key_path(tmp_path).name]


def test_no_key_can_be_made_where_the_store_cannot_be_written(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    assert seal(tmp_path / "file" / "store", "a", b"data") is None


@pytest.mark.parametrize(("plant", "why"), [
    ("mode", "is not a regular file of this user with mode 0600"),
    ("group", "is not a regular file of this user with mode 0600"),
    ("folder", "is not a regular file of this user with mode 0600"),
    ("long", "does not hold 32 bytes"),
    ("short", "does not hold 32 bytes"),
    ("link", "cannot be opened (Too many levels of symbolic links)"),
])
def test_a_key_file_bird_cannot_trust_is_not_used_and_said_once(tmp_path, caplog, plant, why):
    blob = seal(tmp_path, "a", b"data")
    key = key_path(tmp_path)
    if plant == "mode":
        key.chmod(0o604)
    elif plant == "group":
        key.chmod(0o640)
    elif plant == "folder":
        key.unlink()
        key.mkdir(mode=0o700)
    elif plant in ("long", "short"):
        key.write_bytes(key.read_bytes() + b"x" if plant == "long" else key.read_bytes()[:31])
    else:
        (tmp_path / "real.key").write_bytes(key.read_bytes())
        (tmp_path / "real.key").chmod(0o600)
        key.unlink()
        key.symlink_to(tmp_path / "real.key")
    with caplog.at_level(logging.WARNING, logger="bird.sealed"):
        assert unseal(tmp_path, "a", blob) is None
        assert seal(tmp_path, "a", b"data") is None
    assert [r.getMessage() for r in caplog.records] == [
        f"bird: {key} {why}: the compiled-program store is not used (programs are compiled again)"]


def test_a_new_key_file_is_private_and_regular(tmp_path):
    seal(tmp_path, "a", b"x")
    st = os.lstat(key_path(tmp_path))
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_nlink == 1


def test_the_key_is_made_in_a_store_folder_created_with_its_parents(tmp_path):
    root = tmp_path / "cache" / "jax" / "store"
    assert unseal(root, "a", seal(root, "a", b"1")) == b"1"


def test_the_key_is_written_to_a_hidden_temporary_file_in_the_stores_folder_then_linked(tmp_path, monkeypatch):
    monkeypatch.setattr(sealed.tempfile, "tempdir", str(tmp_path / "no_system_temp"))  # a cross-device link fails
    seen = []
    link = os.link

    def watch(src, dst):
        seen.append((os.path.dirname(src), os.path.basename(src)))
        return link(src, dst)

    monkeypatch.setattr(sealed.os, "link", watch)
    assert seal(tmp_path, "a", b"1") is not None
    [(folder, name)] = seen
    assert folder == str(tmp_path) and name.startswith(".key-")
