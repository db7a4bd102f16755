"""bird/files.py one rule at a time: atomic writes (mode, clean-up, durability), in-place files, capped reads of
regular files inside a root, bounded JSON/YAML/npz parsing and links leaving a directory, each with the honest case
beside the refused one (the planted-link scenarios end to end: tests/received/test_received_files.py)."""

from __future__ import annotations

import io
import json
import os
import socket
import stat
from pathlib import Path

import numpy as np
import pytest

from bird import files
from bird.files import (
    LIMITS,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    BoundedParseError,
    UnsafeFileError,
    append_text,
    atomic_writer,
    copy_file,
    links_leaving,
    load_npz,
    load_yaml,
    loads,
    loads_lines,
    open_in_place,
    read_bytes,
    read_json,
    read_text,
    refuse_links_leaving,
    write_bytes,
    write_json,
    write_text,
)


@pytest.fixture()
def umask_027():
    old = os.umask(0o027)
    files._umask.cache_clear()
    yield
    os.umask(old)
    files._umask.cache_clear()


# --- writes ---------------------------------------------------------------------------------------------------
def test_a_written_file_gets_what_open_would_give_under_the_umask_or_the_mode_asked(tmp_path, umask_027):
    write_text(tmp_path / "a.txt", "x")
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o640
    write_bytes(tmp_path / "b.bin", b"y", mode=0o600)
    assert stat.S_IMODE((tmp_path / "b.bin").stat().st_mode) == 0o600


def test_the_umask_is_read_from_proc_as_octal(umask_027):
    assert files._umask() == 0o027


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path):
    write_text(tmp_path / "f.json", "old")
    with pytest.raises(RuntimeError), atomic_writer(tmp_path / "f.json") as fh:
        fh.write(b"half")
        [tmp] = [p for p in tmp_path.iterdir() if p.name != "f.json"]
        assert tmp.name.startswith(".f.json.") and tmp.name.endswith(".tmp")
        raise RuntimeError("stop")
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"] and (tmp_path / "f.json").read_text() == "old"


def test_a_long_name_gets_a_temporary_name_the_filesystem_accepts(tmp_path):
    name = "n" * 200 + ".json"
    write_text(tmp_path / name, "ok")
    assert (tmp_path / name).read_text() == "ok" and len(list(tmp_path.iterdir())) == 1


def test_a_durable_write_syncs_the_file_and_then_its_folder(tmp_path, monkeypatch):
    synced: list[str] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(
        "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"), real(fd))[1])
    write_bytes(tmp_path / "c.pkl", b"z", durable=True)
    assert synced == ["file", "dir"] and (tmp_path / "c.pkl").read_bytes() == b"z"
    synced.clear()
    write_bytes(tmp_path / "d.pkl", b"z")
    assert synced == []


def test_write_json_writes_indented_json_with_a_final_newline_and_anything_else_as_text(tmp_path):
    write_json(tmp_path / "r.json", {"a": [1], "p": Path("/x")})
    assert (tmp_path / "r.json").read_text() == '{\n "a": [\n  1\n ],\n "p": "/x"\n}\n'


def test_append_text_creates_then_appends(tmp_path):
    append_text(tmp_path / "log.jsonl", "one\n")
    append_text(tmp_path / "log.jsonl", "twø\n")
    assert (tmp_path / "log.jsonl").read_text() == "one\ntwø\n"


def test_a_file_changed_in_place_must_be_a_plain_file_with_one_link(tmp_path):
    (tmp_path / "target").write_text("keep")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    with pytest.raises(UnsafeFileError, match="link is a link; refusing to open it"):
        open_in_place(tmp_path / "link", os.O_WRONLY | os.O_APPEND)
    os.link(tmp_path / "target", tmp_path / "hard")
    with pytest.raises(UnsafeFileError, match=r"not a plain file \(a regular file with 2 link\(s\)\)"):
        append_text(tmp_path / "hard", "x")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UnsafeFileError, match=r"\(a FIFO with 1 link\(s\)\); refusing to write"):
        open_in_place(tmp_path / "fifo", os.O_RDONLY)
    assert (tmp_path / "target").read_text() == "keep"
    fd = open_in_place(tmp_path / "fresh", os.O_RDWR | os.O_CREAT)
    try:
        assert os.get_blocking(fd) and stat.S_IMODE(os.fstat(fd).st_mode) == 0o666 & ~files._umask()
    finally:
        os.close(fd)


def test_other_open_errors_than_a_link_are_raised_as_they_are(tmp_path):
    with pytest.raises(FileNotFoundError):
        open_in_place(tmp_path / "missing", os.O_WRONLY)


# --- reads ----------------------------------------------------------------------------------------------------
def test_a_file_of_exactly_the_cap_is_read_and_one_byte_more_is_refused(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 10)
    assert read_bytes(tmp_path / "f", "record", limit=10) == b"x" * 10
    with pytest.raises(UnsafeFileError, match="f is 10 bytes; a record file may hold at most 9 bytes"):
        read_bytes(tmp_path / "f", "record", limit=9)


def test_the_cap_is_the_kinds_unless_a_limit_is_given(tmp_path, monkeypatch):
    monkeypatch.setitem(LIMITS, "status", 4)
    (tmp_path / "s.json").write_text("12345")
    with pytest.raises(UnsafeFileError, match="a status file may hold at most 4 bytes"):
        read_bytes(tmp_path / "s.json", "status")
    assert read_bytes(tmp_path / "s.json", "status", limit=5) == b"12345"


def test_a_file_that_grows_past_the_cap_while_read_is_refused():
    # /proc files report a size of 0 and hold more
    with pytest.raises(UnsafeFileError, match="grew past 16 bytes while read; a record file may hold at most 16"):
        read_bytes(Path("/proc/self/status"), "record", limit=16)
    assert read_bytes(Path("/proc/self/status"), "record").startswith(b"Name:")


def test_a_large_file_is_read_whole(tmp_path):
    data = os.urandom((1 << 20) * 2 + 5)
    (tmp_path / "big").write_bytes(data)
    assert read_bytes(tmp_path / "big", "media") == data


def test_a_link_is_read_only_when_its_target_is_inside_the_root(tmp_path):
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (tmp_path / "outside.json").write_text("{}")
    (run / "in.json").write_text('{"a": 1}')
    (run / "sub" / "up.json").symlink_to(run / "in.json")
    (run / "out.json").symlink_to(tmp_path / "outside.json")
    assert read_json(run / "sub" / "up.json", "record", run) == {"a": 1}
    with pytest.raises(UnsafeFileError, match="up.json is a link that leaves"):
        read_bytes(run / "sub" / "up.json", "record")  # the default root: the file's own folder
    with pytest.raises(UnsafeFileError, match=f"out.json is a link that leaves {run} "):
        read_bytes(run / "out.json", "record", run)
    (run / "sibling").mkdir()
    (tmp_path / "runner").mkdir()
    (run / "prefix.json").symlink_to(tmp_path / "runner")  # /run vs /runner: a shared prefix is not inside
    with pytest.raises(UnsafeFileError, match="leaves"):
        read_bytes(run / "prefix.json", "record", run)


def test_only_regular_files_are_read_naming_what_else_was_found(tmp_path):
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "p")
    with pytest.raises(UnsafeFileError, match=r"d is not a regular file \(a directory\); refusing to read it"):
        read_bytes(tmp_path / "d", "record")
    with pytest.raises(UnsafeFileError, match=r"\(a FIFO\)"):
        read_bytes(tmp_path / "p", "record")
    with pytest.raises(UnsafeFileError, match=r"\(a character device\)"):
        read_bytes(Path("/dev/null"), "record")
    with pytest.raises(FileNotFoundError):
        read_bytes(tmp_path / "missing", "record")


def test_kind_names_cover_every_file_type():
    kinds = [(stat.S_IFDIR, "directory"), (stat.S_IFIFO, "FIFO"), (stat.S_IFCHR, "character device"),
             (stat.S_IFBLK, "block device"), (stat.S_IFSOCK, "socket"), (stat.S_IFREG, "regular file"),
             (0, "special file")]
    assert [files._kind_of(mode) for mode, _ in kinds] == [name for _, name in kinds]


def test_a_socket_is_not_opened(tmp_path):
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "s"))
        with pytest.raises(OSError):
            read_bytes(tmp_path / "s", "record")


def test_copy_and_text_reads_go_through_the_same_checks(tmp_path):
    (tmp_path / "a").write_text("héllo")
    copy_file(tmp_path / "a", tmp_path / "b", "text")
    assert read_text(tmp_path / "b", "text") == "héllo"
    (tmp_path / "bad").write_bytes(b"\xff\xfe")
    with pytest.raises(UnicodeDecodeError):
        read_text(tmp_path / "bad", "text")
    with pytest.raises(UnsafeFileError, match="at most 2 bytes"):
        read_text(tmp_path / "a", "text", limit=2)
    (tmp_path / "out").symlink_to("/etc/hostname")
    with pytest.raises(UnsafeFileError, match="leaves"):
        copy_file(tmp_path / "out", tmp_path / "c", "text", tmp_path)


# --- bounded parsing ------------------------------------------------------------------------------------------
def test_json_nested_to_the_depth_limit_is_read_and_one_level_more_is_refused():
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(BoundedParseError, match=f"JSON nested deeper than {MAX_DEPTH} levels"):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(BoundedParseError, match="nested deeper"):
        loads('{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1))
    with pytest.raises(BoundedParseError, match="nested deeper"):
        loads("[" * 100_000 + "]" * 100_000)  # past the interpreter's recursion limit


def test_json_strings_keys_included_are_bounded_by_max_string():
    assert loads('["abcd"]', max_string=4) == ["abcd"]
    with pytest.raises(BoundedParseError, match=r"a JSON string of 5 characters \(at most 4\)"):
        loads('["abcde"]', max_string=4)
    with pytest.raises(BoundedParseError, match="of 5 characters"):
        loads('{"abcde": 1}', max_string=4)
    with pytest.raises(BoundedParseError, match="of 5 characters"):
        loads('"abcde"', max_string=4)
    assert loads('"' + "x" * files.MAX_STRING + '"') == "x" * files.MAX_STRING


def test_json_integers_are_bounded_in_digits_not_counting_the_sign():
    assert loads("9" * MAX_INT_DIGITS) == int("9" * MAX_INT_DIGITS)
    assert loads("-" + "9" * MAX_INT_DIGITS) == -int("9" * MAX_INT_DIGITS)
    with pytest.raises(BoundedParseError, match=f"a JSON integer of {MAX_INT_DIGITS + 1} digits "
                                                f"\\(at most {MAX_INT_DIGITS}\\)"):
        loads("-" + "9" * (MAX_INT_DIGITS + 1))
    assert loads("1e400") == float("inf") and loads(b'{"a": 1.5}') == {"a": 1.5}


def test_text_that_is_not_json_is_a_value_error():
    with pytest.raises(ValueError) as err:
        loads("{nope")
    assert not isinstance(err.value, BoundedParseError)


def test_json_lines_skip_blank_lines_and_name_the_bad_line_keeping_the_error_kind():
    assert loads_lines(b'{"a": 1}\n\n  \n[2]\n') == [{"a": 1}, [2]]
    with pytest.raises(ValueError, match="^line 3: ") as err:
        loads_lines('1\n2\n{bad\n')
    assert not isinstance(err.value, BoundedParseError)
    with pytest.raises(BoundedParseError, match="^line 2: a JSON integer"):
        loads_lines("1\n" + "9" * 40 + "\n")


def _npz(path: Path, **arrays) -> Path:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    path.write_bytes(buf.getvalue())
    return path


def test_an_npz_is_read_by_name_without_pickles_and_within_its_uncompressed_cap(tmp_path, monkeypatch):
    path = _npz(tmp_path / "p.npz", w=np.arange(4.0), b=np.ones((2, 2), dtype=np.int32))
    got = load_npz(path, "arrays")
    assert sorted(got) == ["b", "w"] and np.array_equal(got["w"], np.arange(4.0)) and got["b"].dtype == np.int32
    big = _npz(tmp_path / "zeros.npz", z=np.zeros(100_000))
    assert big.stat().st_size < 10_000
    monkeypatch.setitem(LIMITS, "arrays", 500_000)
    with pytest.raises(ValueError, match=r"zeros.npz holds 800\d+ bytes uncompressed; a arrays file may hold at most "
                                         "500000"):
        load_npz(big, "arrays")
    with pytest.raises(ValueError, match="Object arrays cannot be loaded"):
        load_npz(_npz(tmp_path / "o.npz", o=np.array([{"a": 1}], dtype=object)), "arrays")
    (tmp_path / "not.npz").write_bytes(b"PK not a zip")
    with pytest.raises(ValueError, match="not.npz is not an .npz"):
        load_npz(tmp_path / "not.npz", "arrays")


def test_yaml_is_read_without_aliases_resolving_nothing_and_within_the_bounds():
    assert load_yaml("a: ${oc.env:HOME}\nb: [1, {c: d}]\n") == {"a": "${oc.env:HOME}", "b": [1, {"c": "d"}]}
    with pytest.raises(BoundedParseError, match="a YAML alias"):
        load_yaml("a: &x [1]\nb: *x\n")
    with pytest.raises(BoundedParseError, match="nested deeper"):
        load_yaml("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(BoundedParseError, match="YAML nested deeper than 64 levels"):
        load_yaml("[" * 5000 + "]" * 5000)
    with pytest.raises(BoundedParseError, match="a JSON string of"):
        load_yaml("a: " + "x" * (files.MAX_STRING + 1))
    with pytest.raises(ValueError, match=r"^not YAML \("):
        load_yaml("a: [unclosed\n")


# --- directories ----------------------------------------------------------------------------------------------
def test_refusing_names_at_most_five_links_and_counts_the_rest(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    refuse_links_leaving(run)  # nothing leaves: no error
    refuse_links_leaving(tmp_path / "missing")
    for i in range(7):
        (run / f"l{i}").symlink_to(tmp_path / f"t{i}")
    with pytest.raises(UnsafeFileError) as err:
        refuse_links_leaving(run, "sweep folder")
    text = str(err.value)
    assert text.startswith(f"{run}: the sweep folder holds links that leave it (l0 -> {tmp_path / 't0'}; ")
    assert "l4 ->" in text and "l5 ->" not in text and "; and 2 more)" in text
    for i in range(2, 7):
        (run / f"l{i}").unlink()
    with pytest.raises(UnsafeFileError) as err:
        refuse_links_leaving(run)
    assert "the run directory holds" in str(err.value) and "more" not in str(err.value)


def test_links_in_subfolders_and_links_to_folders_are_found_with_their_relative_names(tmp_path):
    run = tmp_path / "run"
    (run / "a" / "b").mkdir(parents=True)
    (run / "a" / "b" / "deep").symlink_to(tmp_path)
    (run / "a" / "ok").symlink_to(run / "a" / "b")
    assert links_leaving(run) == [f"a/b/deep -> {tmp_path}"]
    assert links_leaving(str(run)) == [f"a/b/deep -> {tmp_path}"]
    assert json.dumps(links_leaving(run / "a" / "b"))  # relative to the root asked about
    assert links_leaving(run / "a" / "b") == [f"deep -> {tmp_path}"]


def test_a_json_line_may_hold_unicode_line_separators_in_its_strings():
    line = json.dumps({"a": "x\u2028y\u2029z\x85w"}, ensure_ascii=False)  # valid JSON: one line, no \n in it
    text = f"{line}\r\n[1]\n"
    assert loads_lines(text) == loads_lines(text.encode("utf-8")) == [{"a": "x\u2028y\u2029z\x85w"}, [1]]


def test_reads_copies_and_npz_loads_take_the_root_given_not_the_files_folder(tmp_path):
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "data.txt").write_text("inside")
    _npz(run / "p.npz", w=np.arange(3.0))
    (run / "sub" / "text").symlink_to(run / "data.txt")  # leaves sub/, stays inside run/
    (run / "sub" / "arrays.npz").symlink_to(run / "p.npz")
    assert read_text(run / "sub" / "text", "text", run) == "inside"
    copy_file(run / "sub" / "text", tmp_path / "copy", "text", run)
    assert (tmp_path / "copy").read_text() == "inside"
    assert np.array_equal(load_npz(run / "sub" / "arrays.npz", "arrays", run)["w"], np.arange(3.0))


def test_a_link_leaving_says_which_folder_it_leaves(tmp_path):
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (tmp_path / "outside").write_text("x")
    (run / "sub" / "out").symlink_to(tmp_path / "outside")
    with pytest.raises(UnsafeFileError) as err:
        read_bytes(run / "sub" / "out", "record", run)
    assert str(err.value).startswith(f"{run / 'sub' / 'out'} is a link that leaves {run} (to ")
    with pytest.raises(UnsafeFileError) as err:
        read_bytes(run / "sub" / "out", "record")
    assert str(err.value).startswith(f"{run / 'sub' / 'out'} is a link that leaves {run / 'sub'} (to ")


def test_a_link_swapped_in_after_the_path_was_resolved_is_not_followed(tmp_path, monkeypatch):
    (tmp_path / "target").write_text("secret")
    (tmp_path / "swapped").symlink_to(tmp_path / "target")
    # the race: the path resolved to itself (a plain file then), a link by the time it is opened
    with monkeypatch.context() as m, pytest.raises(UnsafeFileError, match="swapped is a link; refusing to open it"):
        m.setattr(files.os.path, "realpath", lambda p: os.fspath(p))
        read_bytes(tmp_path / "swapped", "record")


def test_a_file_growing_past_the_cap_over_several_chunks_is_refused(tmp_path, monkeypatch):
    data = b"x" * ((1 << 20) * 2 + 5)
    (tmp_path / "log").write_bytes(data)
    stat_of = os.fstat

    def small(fd: int) -> os.stat_result:  # the size when opened: 10 bytes; it grew since
        st = list(stat_of(fd))
        st[stat.ST_SIZE] = 10
        return os.stat_result(st)

    with monkeypatch.context() as m:
        m.setattr(files.os, "fstat", small)
        with pytest.raises(UnsafeFileError, match=f"grew past {2 << 20} bytes while read"):
            read_bytes(tmp_path / "log", "media", limit=2 << 20)
        got = read_bytes(tmp_path / "log", "media", limit=len(data))
    assert got == data


def test_an_npz_of_exactly_its_uncompressed_cap_is_read(tmp_path, monkeypatch):
    import zipfile

    path = _npz(tmp_path / "zeros.npz", z=np.zeros(10_000))
    with zipfile.ZipFile(path) as zf:
        size = sum(info.file_size for info in zf.infolist())
    monkeypatch.setitem(LIMITS, "arrays", size)
    assert load_npz(path, "arrays")["z"].shape == (10_000,)
    monkeypatch.setitem(LIMITS, "arrays", size - 1)
    with pytest.raises(ValueError, match="uncompressed"):
        load_npz(path, "arrays")


def test_read_json_bounds_strings_by_the_length_asked(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps({"a": "x" * 20}))
    assert read_json(tmp_path / "s.json", "record", max_string=20) == {"a": "x" * 20}
    with pytest.raises(BoundedParseError, match="a JSON string of 20 characters"):
        read_json(tmp_path / "s.json", "record", max_string=19)


def test_bounds_are_checked_on_every_value_after_a_string():
    with pytest.raises(BoundedParseError, match="a JSON string of 8 characters"):
        loads('["xxxxxxxx", "s"]', max_string=4)  # the short string is checked first, then the long one
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    with pytest.raises(BoundedParseError, match="nested deeper"):
        loads(f'[{deep}, "s"]')


def test_text_that_is_not_yaml_is_refused_with_the_first_200_characters_of_the_parsers_message():
    import yaml

    text = "a: [" + "b, " * 100 + ": : x"
    with pytest.raises(yaml.YAMLError) as parsed:
        yaml.safe_load(text)
    assert len(str(parsed.value)) > 200
    with pytest.raises(ValueError) as err:
        load_yaml(text)
    assert str(err.value) == f"not YAML ({str(parsed.value)[:200]})"


def test_the_alias_refusal_says_bird_reads_no_aliases():
    with pytest.raises(BoundedParseError) as err:
        load_yaml("a: &x [1]\nb: *x\n")
    assert str(err.value) == "a YAML alias (bird does not read aliases in files it receives)"


@pytest.mark.parametrize(("links", "more"), [(5, ""), (6, "; and 1 more")])
def test_five_links_are_named_and_a_sixth_is_counted(tmp_path, links, more):
    run = tmp_path / "run"
    run.mkdir()
    for i in range(links):
        (run / f"l{i}").symlink_to(tmp_path / f"t{i}")
    with pytest.raises(UnsafeFileError) as err:
        refuse_links_leaving(run)
    shown = "; ".join(f"l{i} -> {tmp_path / f't{i}'}" for i in range(5))
    assert str(err.value) == (f"{run}: the run directory holds links that leave it ({shown}{more}); bird writes only "
                              "into a directory whose links stay inside it: remove them, or choose another directory")
