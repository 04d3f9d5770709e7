"""Where root writes what innostall makes (a recording, a redacted copy, an export, an HTML
report): a path through which another user could redirect the writes is refused, for
`record -o`, `watch -o`, `redact -o`, `export --out` and `report --html` alike."""
from __future__ import annotations

import contextlib
import os
import pwd
import stat

from innostall.errors import UserError


def check_path(path: str) -> None:
    """Refuse an output path through which another user could redirect what root writes:
    a symbolic link as the recording directory itself, a link on the way owned by another
    user, or a directory on the way (the recording's own included) that another user owns,
    or may rename entries in (writable by group or others, without the sticky bit that
    /tmp has). A link root or we own, as /var/run is, is followed."""
    absolute = os.path.abspath(path)
    if os.path.islink(absolute):
        raise UserError(f"{path} is a symbolic link: give the directory itself "
                        f"({os.path.realpath(absolute)}) if that is where it goes")
    trusted = {0, os.geteuid()}
    parts = absolute.split(os.sep)[1:]
    for i in range(1, len(parts) + 1):
        here = os.sep + os.path.join(*parts[:i])
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):  # what is not there is made by us
            st = os.lstat(here)
            if stat.S_ISLNK(st.st_mode) and st.st_uid not in trusted:
                raise UserError(f"{here} is a symbolic link owned by {user_name(st.st_uid)}, who could "
                                "point it elsewhere: write into a path root owns")
    on_the_way, here = [], os.path.realpath(absolute)
    while True:
        on_the_way.append(here)
        if here == os.sep:
            break
        here = os.path.dirname(here)
    for directory in on_the_way:
        try:
            st = os.stat(directory)
        except (FileNotFoundError, NotADirectoryError):
            continue  # made by us, 0700 (or refused when it is made: not a directory)
        if st.st_uid not in trusted:
            raise UserError(f"{directory} belongs to {user_name(st.st_uid)}, who could swap what root "
                            "writes there for a link: write into a directory root owns (chown "
                            "what is written afterwards to hand it over)")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            raise UserError(f"{directory} is writable by others (mode {stat.S_IMODE(st.st_mode):o}), "
                            "who could swap what root writes there for a link: write elsewhere")


def user_name(uid: int) -> str:
    try:
        return f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"uid {uid}"
