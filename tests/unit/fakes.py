"""Fake plugins of the stack layers (a temp directory for a device and a file system) for unit tests.

They are registered under the real names, so any spec runs through the whole pipeline without root.
"""

import contextlib
from pathlib import Path

from strata.stack.devices import REGISTRY as DEVICES
from strata.stack.devices import DeviceHandle
from strata.stack.filesystems import REGISTRY as FILESYSTEMS
from strata.stack.filesystems import Mounted
from strata.stack.provision import Registries
from strata.stack.runtimes import REGISTRY as RUNTIMES
from strata.stack.runtimes import Unsupported
from strata.stack.runtimes.native import NATIVE


class FakeDevice:
    def __init__(self, real, root: Path, events: list):
        self.name, self.params, self.root, self.events = real.name, real.params, root, events

    def available(self, host, params=None):
        return None

    def problems(self, params):
        return []  # the destroy guard: a fake device is never anyone's data

    @contextlib.contextmanager
    def provision(self, params, journal, workdir):
        p = self.root / f"{params.name}.dev"
        p.write_bytes(b"")
        self.events.append(("device+", params.name))
        yield DeviceHandle(params.name, str(p), 1 << 20, [], {"type": "fake"})
        self.events.append(("device-", params.name))


class FakeFilesystem:
    def __init__(self, real, root: Path, events: list):
        self.name, self.params, self.root, self.events = real.name, real.params, root, events
        self.min_size_bytes = 0

    def available(self, host, params=None):
        return None

    @contextlib.contextmanager
    def provision(self, params, dev, journal, workdir):
        mp = self.root / f"mnt-{dev.name}-{params.name}"
        mp.mkdir(parents=True, exist_ok=True)
        self.events.append(("fs+", params.name))
        yield Mounted(params, dev, None if params.type == "raw" else mp, "fake")
        self.events.append(("fs-", params.name))


class FakeRuntime:
    """Any runtime, run as native processes (paths of the real plugin, for the expansion)."""

    def __init__(self, real, events: list, unsupported: str | None):
        self.name, self.params, self.events, self.unsupported = real.name, real.params, events, unsupported
        self.paths, self.concurrent, self.limits = real.paths, real.concurrent, real.limits
        self.baseline, self.isolation, self.shorthand = real.baseline, real.isolation, real.shorthand

    def available(self, host, params=None):
        return None

    def impossible(self, params, fs):
        return None

    @contextlib.contextmanager
    def provision(self, params, mounted, journal, workdir, host):
        if self.unsupported and params.name == self.unsupported:
            raise Unsupported(f"{params.name}: driver not supported")
        self.events.append(("rt+", params.name))
        with NATIVE.provision(params, mounted, journal, workdir, host) as s:
            s.path = _any_path(s)
            yield s
        self.events.append(("rt-", params.name))


def _any_path(session):
    """Every path name maps to the native session's bind directory (or the device)."""
    real = session.path

    @contextlib.contextmanager
    def path(name, trial_dir, load):
        with real("device" if name == "device" else "bind", trial_dir, load) as handle:
            yield handle

    return path


def fake_registries(root: Path, events: list | None = None, unsupported_runtime: str | None = None) -> Registries:
    events = events if events is not None else []
    return Registries(
        devices={n: FakeDevice(d, root, events) for n, d in DEVICES.items()},
        filesystems={n: FakeFilesystem(f, root, events) for n, f in FILESYSTEMS.items()},
        runtimes={n: FakeRuntime(r, events, unsupported_runtime) for n, r in RUNTIMES.items()},
    )
