"""Where a recording is written: private to root, and never through a path another user
could redirect (collector/recorder/directory.py); where a redacted copy, an export or an
HTML report is written, by the same rule. No server needed: these are the checks
made before the loader starts, on directories made here (the suite runs as root)."""
from __future__ import annotations

import os
import stat

import pytest

from conftest import REPO, innostall
from innostall.collector.recorder.directory import prepare_dir
from innostall.errors import UserError
from innostall.format import writing

NOBODY = 65534


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_recording_directory_is_roots_alone(tmp_path):
    out = tmp_path / "a" / "rec"
    before = os.umask(0o022)  # even under a lax umask (the command sets 077 for its files)
    try:
        assert prepare_dir(str(out)) is True
    finally:
        os.umask(before)
    assert mode(out) == 0o700 and os.stat(out).st_uid == os.geteuid()


def test_an_empty_directory_given_is_made_private_and_a_full_one_refused(tmp_path):
    given = tmp_path / "given"
    given.mkdir(mode=0o755)
    assert prepare_dir(str(given)) is False and mode(given) == 0o700
    (given / "something").write_text("x")
    with pytest.raises(UserError, match="is not empty"):
        prepare_dir(str(given))


def test_a_symbolic_link_as_the_directory_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "rec").symlink_to(elsewhere)
    with pytest.raises(UserError, match="is a symbolic link: give the directory itself"):
        prepare_dir(str(tmp_path / "rec"))
    assert list(elsewhere.iterdir()) == []


def test_a_link_on_the_way_owned_by_another_user_is_refused(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    os.lchown(link, NOBODY, NOBODY)
    with pytest.raises(UserError, match="symbolic link owned by .* who could point it elsewhere"):
        prepare_dir(str(link / "rec"))
    assert not (target / "rec").exists()
    os.lchown(link, 0, 0)  # root's own link (as /var/run is) is followed
    assert prepare_dir(str(link / "rec")) is True and (target / "rec").is_dir()


@pytest.mark.parametrize("where", ["parent", "itself"])
def test_a_directory_another_user_owns_is_refused(tmp_path, where):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    path = theirs / "rec" if where == "parent" else theirs
    with pytest.raises(UserError, match="belongs to .* write into a directory root owns"):
        prepare_dir(str(path))
    assert list(theirs.iterdir()) == []


def test_a_shared_directory_needs_its_sticky_bit(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(UserError, match=r"is writable by others \(mode 777\)"):
        prepare_dir(str(shared / "rec"))
    os.chmod(shared, 0o1777)  # as /tmp: nobody else may rename what is ours in it
    assert prepare_dir(str(shared / "rec")) is True


def test_a_recording_is_in_progress_while_its_writer_holds_it(tmp_path):
    fd = writing.hold(str(tmp_path))
    try:
        assert writing.in_progress(str(tmp_path))
    finally:
        os.close(fd)
    assert not writing.in_progress(str(tmp_path))
    assert not writing.in_progress(str(tmp_path / "missing"))


# redact -o, export --out and report --html write by the same rule (innostall/format/output_path.py)
WRITERS = {"redact": lambda rec, out: ("redact", rec, "-o", out),
           "export": lambda rec, out: ("export", rec, "--out", out),
           "html": lambda rec, out: ("report", rec, "--html", out / "report.html")}
REFUSED = {"link": "is a symbolic link", "theirs": "belongs to user nobody", "shared": "is writable by others"}


@pytest.mark.parametrize("command", WRITERS)
@pytest.mark.parametrize("trap", REFUSED)
def test_what_reads_a_recording_writes_by_the_same_rule(tmp_path, command, trap):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if trap == "link":
        out = tmp_path / "out"
        out.symlink_to(elsewhere)
    else:
        holder = tmp_path / trap
        holder.mkdir()
        if trap == "theirs":
            os.chown(holder, NOBODY, NOBODY)
        else:
            os.chmod(holder, 0o777)
        out = holder / "out"
        out.mkdir()
    result = innostall(*WRITERS[command](REPO / "tests" / "data" / "pin-catch-up", out))
    said = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(said) == 1 and REFUSED[trap] in said[0], result.stderr
    assert not any(elsewhere.iterdir()) and (trap == "link" or not any(out.iterdir()))
