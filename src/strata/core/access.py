"""Can a user of the host reach a directory? What a server that drops root for its own user needs of its
data's path (PostgreSQL runs as `postgres`; its `initdb` fails with "could not access directory ...:
Permission denied" when a directory above its data keeps that user out, as `mktemp -d` makes them).

Judged from the mode bits of each directory from / down, as the kernel judges search permission for a
user that is not root: the owner's bits for its owner, the group's for a member of its group, the others'
for anyone else. Access control lists are not read (a directory whose ACL lets the user in is reported as
blocking it when its mode bits do not). Directories that do not exist yet are made by strata under the
process's umask, which is judged the same way.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Blocked:
    """The first directory on the way that keeps the user out, and why."""

    path: Path
    why: str  # "mode 0700, owner root"
    umask: bool = False  # the process's umask keeps the user out of what strata makes below `path`


def umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    old = os.umask(0o022)
    os.umask(old)
    return old


def blocking(path: Path, user: str) -> Blocked | None:
    """The first directory from / down to `path` (those strata will make included) that `user` cannot enter,
    or None. Root, and a user the host does not know, are never blocked here (the workload's `available`
    says when its user is missing)."""
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        return None
    if pw.pw_uid == 0:
        return None
    groups = {pw.pw_gid} | {g.gr_gid for g in grp.getgrall() if user in g.gr_mem}
    path = Path(os.path.abspath(path))
    for d in [*reversed(path.parents), path]:
        try:
            st = os.stat(d)
        except FileNotFoundError:
            break  # it and what is below it will be strata's own
        except OSError as e:
            return Blocked(d, f"it cannot be read ({e.strerror})")
        if not stat.S_ISDIR(st.st_mode):
            return None  # not a directory: the plan's other checks say so
        if st.st_uid == pw.pw_uid:
            bit = stat.S_IXUSR
        elif st.st_gid in groups:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return Blocked(d, f"mode {stat.S_IMODE(st.st_mode):04o}, owner {_name(st.st_uid)}")
    mask = umask()
    if mask & 0o001:  # strata makes the directories between it and the data (the mount points, strata-data)
        return Blocked(path, f"strata makes the directories below it under your umask {mask:04o}", umask=True)
    return None


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
