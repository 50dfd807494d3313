"""A fake stack (a temp directory for a device and a file system) for unit tests (STYLE.md item 11)."""

import contextlib
from pathlib import Path

from strata.stack.device import DeviceHandle
from strata.stack.filesystem import Mounted
from strata.stack.provision import Provisioners
from strata.stack.runtime import Unsupported, provision_native


def fake_provisioners(root: Path, events: list | None = None, unsupported_runtime: str | None = None) -> Provisioners:
    events = events if events is not None else []

    @contextlib.contextmanager
    def device(spec, journal, workdir):
        p = root / f"{spec.name}.dev"
        p.write_bytes(b"")
        events.append(("device+", spec.name))
        yield DeviceHandle(spec.name, str(p), 1 << 20, [], {"type": "fake"})
        events.append(("device-", spec.name))

    @contextlib.contextmanager
    def filesystem(fs, dev, journal, workdir):
        mp = root / f"mnt-{dev.name}-{fs.name}"
        mp.mkdir(exist_ok=True)
        events.append(("fs+", fs.name))
        yield Mounted(fs, dev, None if fs.type == "raw" else mp, "fake")
        events.append(("fs-", fs.name))

    @contextlib.contextmanager
    def runtime(rt, mounted, journal, workdir, host):
        if unsupported_runtime and rt.name == unsupported_runtime:
            raise Unsupported(f"{rt.name}: driver not supported")
        events.append(("rt+", rt.name))
        with provision_native(rt, mounted, journal, workdir, host) as s:
            yield s
        events.append(("rt-", rt.name))

    return Provisioners(device={"loop": device, "zram": device, "block": device}, filesystem=filesystem,
                        runtime={"native": runtime, "docker": runtime})
