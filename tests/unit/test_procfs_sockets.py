"""Removing a directory that others may use meanwhile (the Kubernetes test bed's fixed host paths): every file
and symlink goes, but a socket some process has bound stays, with the directories that hold it."""

import os
import socket

from strata.stack.procfs import listening_sockets, remove_tree_but_live_sockets

PROC_NET_UNIX = """Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 31337 /run/containerd/s/abc
0000000000000000: 00000003 00000000 00000000 0001 03 31338
0000000000000000: 00000002 00000000 00010000 0001 01 31339 @/containerd-shim/x.sock
"""


def test_listening_sockets_are_the_bound_paths():
    assert listening_sockets(PROC_NET_UNIX) == {"/run/containerd/s/abc"}
    assert listening_sockets("") == set()


def test_a_live_socket_stays_and_everything_else_goes(tmp_path):
    top = tmp_path / "containerd"
    (top / "s").mkdir(parents=True)
    (top / "old" / "deep").mkdir(parents=True)
    (top / "old" / "deep" / "f").write_text("x")
    (top / "link").symlink_to(tmp_path)  # a symlink to a directory: unlinked, never followed
    (tmp_path / "keep").write_text("outside")
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        live.bind(str(top / "s" / "live"))
        dead.bind(str(top / "s" / "dead"))
        dead.close()  # its file stays, no process holds it
        remove_tree_but_live_sockets(top)
        assert sorted(os.listdir(top)) == ["s"] and os.listdir(top / "s") == ["live"]
        assert (tmp_path / "keep").read_text() == "outside"
    finally:
        live.close()
    remove_tree_but_live_sockets(top)
    assert not top.exists()
    remove_tree_but_live_sockets(top)  # gone already: nothing to do
