"""The remote device without root: fabric parsing, address choice, client selection, argv,
configfs writes against a directory, sysfs lookups against fake trees, the watcher."""

from __future__ import annotations

import ipaddress
import os
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from strata.collectors.netdev import NetdevCollector
from strata.collectors.process import TICKS_PER_S, ProcessCollector
from strata.core.errors import StrataError
from strata.stack import marked, netns
from strata.stack.bounded import run_bounded
from strata.stack.journal import Journal, pending
from strata.stack.remote import nbd, nvme
from strata.stack.remote.caps import Caps, choose_client, problems
from strata.stack.remote.device import backing_problems
from strata.stack.remote.model import RemoteDevice
from strata.stack.remote.watch import StallCheck, Watcher

ip = ipaddress.ip_address
net = ipaddress.ip_network


# ---- fabric parameters -------------------------------------------------------------


@pytest.mark.parametrize(
    "text,us",
    [
        ("0.05ms", 50.0),
        ("50us", 50.0),
        ("50usec", 50.0),
        ("1s", 1e6),
        ("1.5ms", 1500.0),
        ("2 ms", 2000.0),
        (0, 0.0),
        ("0us", 0.0),
    ],
)
def test_parse_time_us(text, us):
    assert netns.parse_time_us(text) == pytest.approx(us)


@pytest.mark.parametrize("bad", ["5", 5, 0.5, "fast", "-1ms", "1 hour", True])
def test_parse_time_needs_a_unit(bad):
    with pytest.raises(ValueError):
        netns.parse_time_us(bad)


@pytest.mark.parametrize(
    "text,bit",
    [
        ("10gbit", 10**10),
        ("100mbit", 10**8),
        ("1gibit", 2**30),
        ("125mbps", 10**9),
        ("8kbit", 8000),
        ("2.5gbit", 25 * 10**8),
    ],
)
def test_parse_rate_bit(text, bit):
    assert netns.parse_rate_bit(text) == bit


@pytest.mark.parametrize("bad", ["10", 10, "fast", "1bit", "10gb", True])
def test_parse_rate_rejects(bad):
    with pytest.raises(ValueError):
        netns.parse_rate_bit(bad)


def test_format_rate_and_time():
    assert [netns.format_rate(b) for b in (10**10, 10**8, 1500, 2**30)] == [
        "10gbit",
        "100mbit",
        "1500bit",
        "1073741824bit",
    ]
    assert netns.format_us(50.0) == "50us" and netns.format_us(12.5) == "12.5us"


def test_netem_argv_has_delay_and_rate():
    argv = netns.qdisc_argv("st1h", netns.Fabric(50.0, 10**10), "netem")
    assert argv[:7] == ["tc", "qdisc", "replace", "dev", "st1h", "root", "netem"]
    assert argv[argv.index("delay") + 1] == "50us" and argv[argv.index("rate") + 1] == "10000000000bit"
    assert "rate" not in netns.qdisc_argv("x", netns.Fabric(50.0), "netem")


def test_tbf_argv_burst_covers_a_millisecond():
    argv = netns.qdisc_argv("x", netns.Fabric(0.0, 10**10), "tbf")
    assert argv[argv.index("tbf") + 1 : argv.index("tbf") + 3] == ["rate", "10000000000bit"]
    assert int(argv[argv.index("burst") + 1]) == 10**10 // 8 // 1000
    assert int(netns.qdisc_argv("x", netns.Fabric(0.0, 10**6), "tbf")[argv.index("burst") + 1]) == 128 << 10


def test_qdisc_choice():
    have_all = {"netem": None, "tbf": None}
    no_netem = {"netem": "Specified qdisc kind is unknown.", "tbf": None}
    assert netns.qdisc_kind(netns.Fabric(), no_netem) == (None, None)
    assert netns.qdisc_kind(netns.Fabric(50.0), have_all) == ("netem", None)
    assert netns.qdisc_kind(netns.Fabric(0.0, 10**9), have_all) == ("netem", None)
    assert netns.qdisc_kind(netns.Fabric(0.0, 10**9), no_netem) == ("tbf", None)
    kind, why = netns.qdisc_kind(netns.Fabric(50.0, 10**9), no_netem)
    assert kind is None and "netem" in why and "Specified qdisc kind is unknown" in why


# ---- names and addresses -----------------------------------------------------------


def test_names_fit_ifnamsiz_and_differ():
    ns, h, n = netns.names("remote")
    assert ns.startswith("strata-remote-") and len(h) <= 15 and len(n) <= 15 and h != n
    assert netns.names("x")[1] != netns.names("x")[1]


def test_pick_block_avoids_the_hosts_own_addresses():
    # the project's VMs: eth0 192.0.2.2/24, gateway 192.0.2.1, broadcast route 192.0.2.255
    addrs = [ip("192.0.2.2"), ip("192.0.2.1"), ip("127.0.0.1")]
    nets = [net("192.0.2.0/24"), net("192.0.2.2/32"), net("192.0.2.255/32"), net("127.0.0.0/8")]
    block = netns.pick_block(netns.POOL, addrs, nets)
    assert block == net("192.0.2.248/30")
    assert all(a not in block for a in addrs)


def test_pick_block_skips_other_namespaces_links():
    nets = [net("192.0.2.252/30"), net("192.0.2.248/30")]
    assert netns.pick_block(netns.POOL, [], nets) == net("192.0.2.244/30")


def test_pick_block_full_pool():
    small = net("192.0.2.0/29")
    assert netns.pick_block(small, [ip("192.0.2.1"), ip("192.0.2.6")], []) is None


def test_a_wide_route_does_not_block_everything():
    assert netns.pick_block(netns.POOL, [], [net("0.0.0.0/0"), net("192.0.2.0/24")]) == net("192.0.2.252/30")


# ---- the spec model ----------------------------------------------------------------


def test_remote_device_defaults_and_names():
    d = RemoteDevice()
    assert (d.transport, d.client, d.size, d.latency, d.rate) == ("nbd", "auto", 4 << 30, 0.0, None)
    assert d.name == "remote-nbd"
    assert RemoteDevice(latency="0.05ms", rate="10gbit").name == "remote-nbd-50us-10gbit"
    assert RemoteDevice(name="far", latency="1ms").name == "far"


def test_remote_device_round_trips_through_json():
    d = RemoteDevice(latency="0.05ms", rate="10gbit", size="1GiB")
    assert RemoteDevice.model_validate_json(d.model_dump_json()) == d
    assert d.fabric == netns.Fabric(50.0, 10**10)


@pytest.mark.parametrize(
    "bad",
    [
        {"size": "1GiB", "backing_path": "/dev/sdz"},
        {"destroy": True},
        {"size": "100KiB"},
        {"size": "65.5MiB"},
        {"transport": "nvme-tcp", "client": "fuse"},
        {"latency": "2s"},
        {"rate": "fast"},
        {"rate": 100},
        {"transport": "iscsi"},
        {"latency": "50"},
    ],
)
def test_remote_device_rejects(bad):
    with pytest.raises(ValidationError):
        RemoteDevice(**bad)


def test_backing_path_keeps_no_size():
    d = RemoteDevice(backing_path="/dev/sdz", destroy=True)
    assert d.size is None and d.backing_path == "/dev/sdz"
    assert backing_problems(RemoteDevice()) == []


def test_backing_path_has_the_block_guard(tmp_path):
    f = tmp_path / "notablock"
    f.write_bytes(b"x")
    assert backing_problems(RemoteDevice(backing_path=str(f))) == [f"{f} is not a block device"]


# ---- client selection and availability --------------------------------------------

ALL_TOOLS = {
    t: f"/usr/bin/{t}" for t in ("ip", "tc", "nsenter", "unshare", "losetup", "nbdkit", "nbdfuse", "nbd-client", "nvme")
}


def caps(**kw) -> Caps:
    base = dict(
        root=True,
        tools=dict(ALL_TOOLS),
        fuse=None,
        nbd_module=None,
        nvme_modules=None,
        qdisc_missing={"netem": None, "tbf": None},
    )
    base.update(kw)
    return Caps(**base)


NO_NBD = "modprobe nbd failed: modprobe: FATAL: Module nbd not found in directory /lib/modules/6.18"


@pytest.mark.parametrize(
    "client,host,expect",
    [
        ("auto", caps(), "kernel"),
        ("auto", caps(nbd_module=NO_NBD), "fuse"),
        ("auto", caps(tools={**ALL_TOOLS, "nbd-client": None}), "fuse"),
        ("fuse", caps(), "fuse"),
        ("kernel", caps(), "kernel"),
    ],
)
def test_client_choice(client, host, expect):
    assert choose_client(RemoteDevice(client=client), host) == (expect, None)


def test_kernel_client_refused_without_the_module():
    kind, why = choose_client(RemoteDevice(client="kernel"), caps(nbd_module=NO_NBD))
    assert kind is None and why == f"no kernel nbd client: {NO_NBD}"


def test_no_client_at_all_gives_both_reasons():
    kind, why = choose_client(RemoteDevice(), caps(nbd_module=NO_NBD, fuse="no /dev/fuse (modprobe fuse)"))
    assert kind is None and "Module nbd not found" in why and "/dev/fuse" in why


def test_fuse_client_needs_nbdfuse():
    kind, why = choose_client(RemoteDevice(client="fuse"), caps(tools={**ALL_TOOLS, "nbdfuse": None}))
    assert kind is None and "apt-get install libnbd-bin" in why


def test_nvme_needs_the_kernel_modules():
    why_mod = "no nvmet/nvme-tcp kernel modules: modprobe nvmet failed: modprobe: FATAL: Module nvmet not found"
    assert choose_client(RemoteDevice(transport="nvme-tcp"), caps(nvme_modules=why_mod)) == (None, why_mod)
    assert choose_client(RemoteDevice(transport="nvme-tcp"), caps()) == ("kernel", None)
    assert "nvme-cli" in choose_client(RemoteDevice(transport="nvme-tcp"), caps(tools={**ALL_TOOLS, "nvme": None}))[1]


def test_problems():
    assert problems(RemoteDevice(), caps()) is None
    assert problems(RemoteDevice(), caps(root=False)).startswith("needs root")
    assert "apt-get install nbdkit" in problems(RemoteDevice(), caps(tools={**ALL_TOOLS, "nbdkit": None}))
    assert "apt-get install iproute2" in problems(RemoteDevice(), caps(tools={**ALL_TOOLS, "tc": None}))
    no_netem = {"netem": "`tc qdisc add ... netem`: Error: Specified qdisc kind is unknown.", "tbf": None}
    assert "netem" in problems(RemoteDevice(latency="50us"), caps(qdisc_missing=no_netem))
    assert problems(RemoteDevice(rate="1gbit"), caps(qdisc_missing=no_netem)) is None
    # nvme-tcp needs no nbdkit
    assert problems(RemoteDevice(transport="nvme-tcp"), caps(tools={**ALL_TOOLS, "nbdkit": None})) is None


# ---- NBD argv and sysfs lookups -----------------------------------------------------


def test_nbdkit_argv_listens_on_the_namespace_address_without_cache(tmp_path):
    argv = nbd.nbdkit_argv("192.0.2.250", 10809, "/w/backing.img", tmp_path / "nbdkit.pid")
    assert argv[:2] == ["nbdkit", "--foreground"]
    assert argv[argv.index("--ipaddr") + 1] == "192.0.2.250" and argv[argv.index("--port") + 1] == "10809"
    assert argv[argv.index("--pidfile") + 1] == str(tmp_path / "nbdkit.pid")
    assert argv[-4:] == ["file", "file=/w/backing.img", "cache=none", "fadvise=random"]


def test_nbdkit_runs_in_the_namespace_with_nsenter():
    host = netns.NsHost("strata-remote-ab", netns.Link("stabh", "stabn", "192.0.2.249", "192.0.2.250"))
    assert host.argv(["nbdkit"]) == ["nsenter", "--net=/run/netns/strata-remote-ab", "nbdkit"]


def test_nbdfuse_and_nbd_client_argv(tmp_path):
    argv = nbd.nbdfuse_argv(tmp_path / "mnt", "192.0.2.250", 10809, tmp_path / "p")
    assert argv[0] == "nbdfuse" and argv[-2:] == [str(tmp_path / "mnt"), "nbd://192.0.2.250:10809"]
    assert argv[argv.index("--connections") + 1] == "4" and argv[argv.index("--pidfile") + 1] == str(tmp_path / "p")
    k = nbd.nbd_client_argv("192.0.2.250", 10809, "/dev/nbd3")
    assert k[:4] == ["nbd-client", "192.0.2.250", "10809", "/dev/nbd3"]
    assert k[k.index("-timeout") + 1] == str(nbd.KERNEL_TIMEOUT_S) and k[k.index("-block-size") + 1] == "4096"


def _sysdev(root: Path, name: str, **files: str) -> None:
    d = root / name
    for rel, text in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)


def test_free_nbd_device(tmp_path):
    _sysdev(tmp_path, "nbd0", size="2097152", pid="123")
    _sysdev(tmp_path, "nbd10", size="0")
    _sysdev(tmp_path, "nbd2", size="0")
    assert nbd.free_nbd_device(tmp_path) == "/dev/nbd2"
    _sysdev(tmp_path, "nbd2", pid="5")
    assert nbd.free_nbd_device(tmp_path) == "/dev/nbd10"
    assert nbd.free_nbd_device(tmp_path / "none") is None


def test_loops_on_matches_sysfs_text(tmp_path):
    _sysdev(tmp_path, "loop0", **{"loop/backing_file": "/w/remote-x/mnt/nbd\n"})
    _sysdev(tmp_path, "loop1", **{"loop/backing_file": "/w/other.img\n"})
    _sysdev(tmp_path, "loop2")
    assert nbd.loops_on("/w/remote-x/mnt/nbd", tmp_path) == ["/dev/loop0"]
    assert nbd.loops_on("/w/nothing", tmp_path) == []


MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
43 27 0:39 / /var/tmp/wd/remote-a/mnt rw,nosuid,nodev,relatime - fuse /dev/fuse rw,user_id=0,group_id=0
44 27 7:1 / /var/tmp/wd/mnt/remote-ext4 rw,relatime - ext4 /dev/loop1 rw
"""


def test_fuse_connection_number_is_the_minor():
    assert nbd.fuse_connection("/var/tmp/wd/remote-a/mnt", MOUNTINFO) == 39
    assert nbd.fuse_connection("/var/tmp/wd/mnt/remote-ext4", MOUNTINFO) is None
    assert nbd.fuse_connection("/nowhere", MOUNTINFO) is None


# ---- NVMe/TCP: configfs writes against a directory ------------------------------------


def test_nvmet_configfs_writes(tmp_path):
    root = tmp_path / "nvmet"
    (root / "ports").mkdir(parents=True)
    (root / "ports" / "1").mkdir()
    target = nvme.NvmetTarget(
        root, "nqn.2014-08.org.strata:t1", nvme.free_port_id(root), "192.0.2.250", str(tmp_path / "backing.img")
    )
    assert target.port_id == 2
    links = []

    def symlink(link: Path, dest: Path):
        links.append((link, dest))
        link.symlink_to(dest)

    nvme.run_ops(target.create_ops(), symlink)
    sub, port = root / "subsystems" / target.nqn, root / "ports" / "2"
    ns = sub / "namespaces" / "1"
    assert (sub / "attr_allow_any_host").read_text() == "1"
    assert (ns / "device_path").read_text() == str(tmp_path / "backing.img")
    assert (ns / "buffered_io").read_text() == "0"  # a file is served with O_DIRECT
    assert (ns / "enable").read_text() == "1"
    assert {f: (port / f).read_text() for f in ("addr_trtype", "addr_adrfam", "addr_traddr", "addr_trsvcid")} == {
        "addr_trtype": "tcp",
        "addr_adrfam": "ipv4",
        "addr_traddr": "192.0.2.250",
        "addr_trsvcid": "4420",
    }
    assert links == [(port / "subsystems" / target.nqn, sub)]  # the only op made inside the namespace
    # the namespace is enabled before the port is linked (linking starts the listener)
    kinds = [op[0] for op in target.create_ops()]
    assert kinds[-1] == "symlink" and kinds.index("symlink") > [op[1] for op in target.create_ops()].index(
        ns / "enable"
    )


def test_nvmet_block_backing_has_no_buffered_io_attr(tmp_path):
    ops = nvme.NvmetTarget(tmp_path, "nqn.x", 1, "192.0.2.250", "/dev/null").create_ops()
    # /dev/null is a character device, not a block device: still served as a file
    assert any(str(op[1]).endswith("buffered_io") for op in ops)
    blk = next((p for p in Path("/dev").iterdir() if p.is_block_device()), None)
    if blk is not None:
        ops = nvme.NvmetTarget(tmp_path, "nqn.x", 1, "192.0.2.250", str(blk)).create_ops()
        assert not any(str(op[1]).endswith("buffered_io") for op in ops)


def test_nvmet_removal_order_and_idempotence(tmp_path):
    target = nvme.NvmetTarget(tmp_path, "nqn.x", 3, "192.0.2.250", "/dev/sdz")
    ops = target.remove_ops()
    assert [op[0] for op in ops] == ["unlink", "rmdir", "write", "rmdir", "rmdir"]
    assert ops[0][1] == tmp_path / "ports" / "3" / "subsystems" / "nqn.x"  # unlink first: stops the listener
    nvme.run_ops(ops, symlink=lambda a, b: None, missing_ok=True)  # nothing there: no error
    with pytest.raises(FileNotFoundError):
        nvme.run_ops(ops, symlink=lambda a, b: None)


def test_nvme_connect_argv_has_a_short_loss_timeout():
    argv = nvme.connect_argv("192.0.2.250", 4420, "nqn.x")
    assert argv[:2] == ["nvme", "connect"] and "--transport=tcp" in argv and "--traddr=192.0.2.250" in argv
    assert f"--ctrl-loss-tmo={nvme.CTRL_LOSS_TMO_S}" in argv and "--nqn=nqn.x" in argv


def test_find_nvme_namespace(tmp_path):
    _sysdev(tmp_path, "nvme-subsys0", subsysnqn="nqn.other\n", **{"nvme0/x": "", "nvme0n1/x": ""})
    _sysdev(tmp_path, "nvme-subsys1", subsysnqn="nqn.2014-08.org.strata:t1\n", **{"nvme1/x": "", "nvme1n1/x": ""})
    assert nvme.find_namespace("nqn.2014-08.org.strata:t1", tmp_path) == ("nvme1n1", "nvme1")
    assert nvme.find_namespace("nqn.absent", tmp_path) is None


# ---- the watcher -------------------------------------------------------------------


class FakeStats:
    def __init__(self):
        self.in_flight, self.done = 0, 0

    def __call__(self, names):
        return {names[0]: {"read_ios": self.done, "write_ios": 0, "in_flight": self.in_flight}}


def test_stall_check():
    stats, now = FakeStats(), [0.0]
    check = StallCheck("loop9", stall_s=10, read=stats, clock=lambda: now[0])
    assert check() is None
    stats.in_flight = 1
    now[0] = 5
    assert check() is None  # first sight of this count
    now[0] = 14
    assert check() is None  # 9 s without a completion
    stats.done, now[0] = 1, 15
    assert check() is None  # progress resets the clock
    now[0] = 26
    why = check()
    assert why and "1 I/O(s) in flight on loop9" in why and "11 s" in why
    stats.in_flight, now[0] = 0, 100
    assert check() is None  # idle is not a stall


def test_stall_check_device_gone():
    assert "gone" in StallCheck("loop9", read=lambda names: {})()


def test_watcher_aborts_once_and_keeps_reporting():
    broken, aborted = [None], []
    w = Watcher([lambda: None, lambda: broken[0]], abort=lambda: aborted.append(1))
    assert w.check() is None and not aborted
    broken[0] = "nbdkit (pid 7) exited: killed"
    assert w.check() == ("remote_lost", "nbdkit (pid 7) exited: killed")
    broken[0] = None
    assert w.check() == ("remote_lost", "nbdkit (pid 7) exited: killed")
    assert aborted == [1]


def test_watcher_thread_notices_within_a_period():
    broken, aborted = [None], []
    w = Watcher([lambda: broken[0]], abort=lambda: aborted.append(time.monotonic()), period_s=0.05)
    w.start()
    t = time.monotonic()
    broken[0] = "link down"
    deadline = t + 5
    while not aborted and time.monotonic() < deadline:
        time.sleep(0.01)
    w.stop()
    assert aborted and aborted[0] - t < 1.0


# ---- collectors --------------------------------------------------------------------


def test_process_collector_cpu_and_io(tmp_path):
    d = tmp_path / "42"
    d.mkdir()

    def write(utime, stime, rchar, read_bytes):
        (d / "stat").write_text(f"42 (nbd kit) S 1 42 42 0 -1 4194560 0 0 0 0 {utime} {stime} 0 0 20 0 16 0 1 0 0")
        (d / "io").write_text(
            f"rchar: {rchar}\nwchar: 7\nsyscr: 1\nsyscw: 1\nread_bytes: {read_bytes}\n"
            f"write_bytes: 0\ncancelled_write_bytes: 0\n"
        )

    c = ProcessCollector("remote_procs", {"target": 42, "client": 43}, proc=tmp_path)
    write(10, 5, 1000, 0)
    c.sample()
    c.times[-1] -= 2.0  # two seconds ago
    write(10 + TICKS_PER_S, 5 + TICKS_PER_S // 2, 1000 + (8 << 20), 4096)
    c.sample()
    s = c.summary()
    assert s["target"]["cpu_s"] == pytest.approx(1.5)
    assert s["target"]["cpu_percent"] == pytest.approx(75.0, rel=0.01)
    assert (s["target"]["rchar"], s["target"]["read_bytes"], s["target"]["wchar"]) == (8 << 20, 4096, 0)
    assert "client" not in s  # never seen: no numbers, not zeros
    series = c.series()["target"]
    assert series["cpu_percent"] == [pytest.approx(75.0, rel=0.01)] and series["read_bytes"] == [4096]


def test_process_collector_without_io_access(tmp_path):
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "stat").write_text("42 (x) S 1 42 42 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 0 0")
    c = ProcessCollector("p", {"t": 42}, proc=tmp_path)
    c.sample()
    c.sample()
    assert c.summary()["t"]["cpu_s"] == 0 and "read_bytes" not in c.summary()["t"]


def test_netdev_collector(tmp_path):
    stats = tmp_path / "st1h" / "statistics"
    stats.mkdir(parents=True)

    def write(**v):
        for k in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
            (stats / k).write_text(str(v.get(k, 0)))

    c = NetdevCollector("remote_link", ["st1h", "gone"], sysfs=tmp_path)
    write(rx_bytes=100, tx_bytes=10, rx_packets=2, tx_packets=1)
    c.sample()
    write(rx_bytes=4196, tx_bytes=60, rx_packets=5, tx_packets=3)
    c.sample()
    assert c.summary() == {"st1h": {"rx_bytes": 4096, "tx_bytes": 50, "rx_packets": 3, "tx_packets": 2}}
    assert c.series()["st1h"]["rx_bytes"] == [4096]


# ---- daemons found by their marker --------------------------------------------------

PY = os.path.basename(os.path.realpath(sys.executable))
DAEMON = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)"


def test_daemon_started_found_by_marker_and_stopped(tmp_path):
    j = Journal("unit-daemon", directory=tmp_path / "state")
    pidfile = tmp_path / "d.pid"
    d = marked.start_daemon(
        [sys.executable, "-c", DAEMON, str(pidfile)],
        j,
        marker=str(pidfile),
        programs=[PY],
        log=tmp_path / "d.log",
        ready=pidfile,
    )
    assert d.alive() and marked.find_marked(str(pidfile), [PY]) == [d.pid]
    assert marked.find_marked(str(pidfile), ["nbdkit"]) == []  # another program never matches
    assert [e["kind"] for e in pending(j.path)] == ["marked_process"]
    d.stop(j, term_s=2)
    assert not d.alive() and marked.find_marked(str(pidfile), [PY]) == []
    assert pending(j.path) == []


def test_daemon_undo_from_the_journal_alone(tmp_path):
    j = Journal("unit-daemon2", directory=tmp_path / "state")
    pidfile = tmp_path / "d.pid"
    d = marked.start_daemon(
        [sys.executable, "-c", DAEMON, str(pidfile)],
        j,
        marker=str(pidfile),
        programs=[PY],
        log=tmp_path / "d.log",
        ready=pidfile,
    )
    [entry] = pending(j.path)
    marked._undo_marked(entry["data"])
    d.proc.wait(timeout=5)
    assert not d.alive()


def test_daemon_that_dies_at_start_says_why(tmp_path):
    j = Journal("unit-daemon3", directory=tmp_path / "state")
    pidfile = tmp_path / "d.pid"
    with pytest.raises(StrataError, match="cannot bind 192.0.2.250"):
        marked.start_daemon(
            [sys.executable, "-c", "import sys; sys.exit('cannot bind 192.0.2.250')", str(pidfile)],
            j,
            marker=str(pidfile),
            programs=[PY],
            log=tmp_path / "d.log",
            ready=pidfile,
        )
    assert pending(j.path) == []


def test_run_bounded_gives_up():
    t = time.monotonic()
    r = run_bounded(["sleep", "30"], timeout_s=0.2)
    assert r.returncode is None and not r.ok and time.monotonic() - t < 30  # given up, not waited out
    assert "did not finish" in r.describe()
    assert run_bounded(["true"]).ok
    assert run_bounded(["/nonexistent/tool"]).returncode == 127


def test_doctor_rows(monkeypatch):
    from strata.stack.remote import caps as caps_mod

    no_netem = {"netem": "`tc qdisc add ... netem`: Error: Specified qdisc kind is unknown.", "tbf": None}
    monkeypatch.setattr(
        caps_mod, "probe", lambda: caps(nbd_module=NO_NBD, nvme_modules="no nvmet", qdisc_missing=no_netem)
    )
    rows = {name: why for _, name, why in caps_mod.doctor_rows()}
    assert rows["remote:nbd (fuse client: nbdfuse + loop)"] is None
    assert "Module nbd not found" in rows["remote:nbd (kernel client: nbd + nbd-client)"]
    assert rows["remote:nvme-tcp (kernel nvmet + nvme-cli)"] == "no nvmet"
    assert "netem" in rows["remote fabric latency (netem)"] and rows["remote fabric rate (netem or tbf)"] is None


# a daemon that asks to die with the thread that forked it (PR_SET_PDEATHSIG), as nbdkit does
PDEATHSIG_DAEMON = """
import ctypes, signal, sys, time
ctypes.CDLL(None).prctl(1, signal.SIGTERM)
open(sys.argv[1], "w").write("1")
time.sleep(60)
"""


def test_a_daemon_outlives_the_thread_that_started_it(tmp_path):
    """An agent builds stacks in each part's thread; the daemons must serve the next part too."""
    import threading

    j = Journal("unit-daemon4", directory=tmp_path / "state")
    pidfile = tmp_path / "d.pid"
    box = {}

    def start():
        box["d"] = marked.start_daemon(
            [sys.executable, "-c", PDEATHSIG_DAEMON, str(pidfile)],
            j,
            marker=str(pidfile),
            programs=[PY],
            log=tmp_path / "d.log",
            ready=pidfile,
        )
        time.sleep(0.3)  # the daemon asked for its signal while this thread lived

    t = threading.Thread(target=start)
    t.start()
    t.join()
    time.sleep(0.5)
    try:
        assert box["d"].alive(), "the daemon died with the thread that started it"
    finally:
        box["d"].stop(j, term_s=2)


def test_a_storage_host_device_is_named_after_it_and_attaches_to_its_target():
    d = RemoteDevice(host="b", size="64MiB")
    assert d.name == "remote-nbd-on-b" and d.served_at is None
    assert d.model_copy(update={"served_at": "192.0.2.9:10810/0a1b2c3d"}).served_at.startswith("192.0.2.9:")
    with pytest.raises(ValidationError, match="served_at"):
        RemoteDevice(host="b", served_at="192.0.2.9")
    caps = Caps(True, {t: f"/usr/bin/{t}" for t in ("nbdfuse", "losetup")}, None, "no nbd module", "no nvme")
    assert problems(d, caps) is None  # the client alone: no nbdkit, ip or tc needed on the client host


def test_link_counters_from_proc_net_dev_when_sysfs_shows_another_namespace():
    """An agent on a test host sees the machine's /sys; /proc/net/dev is its own namespace's."""
    from strata.collectors.netdev import proc_net_dev

    text = (
        "Inter-|   Receive                                                |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls\n"
        "    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0\n"
        "st1a2bh: 52428800  12800    0    0    0     0          0         0  1048576    6400    0    0    0     0\n"
    )
    assert proc_net_dev("st1a2bh", text) == {
        "rx_bytes": 52428800,
        "rx_packets": 12800,
        "tx_bytes": 1048576,
        "tx_packets": 6400,
    }
    assert proc_net_dev("st9z9zh", text) is None
    assert netns.link_state("strata-no-such-if0") == "absent" and not netns.iface_exists("strata-no-such-if0")


def test_a_device_served_by_another_host_is_a_declared_capability():
    """hosts/, the plan and the spec's checks ask the device's plugin (`Served`), never the parameters by name."""
    from strata.stack.devices import REGISTRY, guarded_name, served_at, served_by
    from strata.stack.devices.base import HostDevice, Served
    from strata.stack.devices.block import BlockParams
    from strata.stack.devices.loop import LoopParams

    assert [name for name, d in REGISTRY.items() if isinstance(d, Served)] == ["remote"]
    d = RemoteDevice(host="b", size="64MiB")
    assert served_by(d) == "b" and served_at(d) is None
    assert served_at(d.model_copy(update={"served_at": "192.0.2.9:10810/0a1b2c3d"})) == "192.0.2.9:10810/0a1b2c3d"
    assert served_by(RemoteDevice(size="64MiB")) is None  # served from a namespace here
    assert served_by(LoopParams()) is None and served_at(LoopParams()) is None
    assert [name for name, d in REGISTRY.items() if isinstance(d, HostDevice)] == ["block"]
    assert guarded_name(BlockParams(path="/dev/sdz")) == "/dev/sdz" and guarded_name(d) == "remote-nbd-on-b"
