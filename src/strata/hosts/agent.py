"""strata's agent on one host: builds that host's stacks and runs its parts of trials for the manager.

The agent holds, per run of the manager, a journal (under its state dir, in
`agent/journal/`, apart from local runs' journals) and a StackCache: the same
objects a local run holds, so a stack built for one trial serves the next one
that shares it, a layer that died is built again, and the journal undoes all
of it after a crash. Parts run one at a time, each in a thread (part.py); the
HTTP server (server.py) only calls the methods here.

Workload parameters that name a file on the manager (a fio job file, a
Filebench .f file) arrive with the part and are written under the part's
directory; the part's parameters then name that copy.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import secrets
import shutil
import tarfile
import tempfile
import threading
import time
from pathlib import Path

from pydantic import TypeAdapter

from strata import __version__
from strata.core.errors import StrataError, Unsupported
from strata.core.host import host_facts
from strata.core.jsondoc import JsonArray, JsonObject, JsonValue, obj, text, whole
from strata.core.params import Layer, Load
from strata.experiment.expand import Trial
from strata.experiment.model import Device, Runtime
from strata.hosts import clock
from strata.results.result import Result
from strata.results.store import ResultStore
from strata.run.trial import base_result, failed_result, now_iso, run_trial
from strata.run.undo import undo_actions
from strata.stack.filesystems import FilesystemParams
from strata.stack.journal import Journal
from strata.stack.journal import cleanup as journal_cleanup
from strata.stack.provision import Registries, StackCache
from strata.stack.remote.model import RemoteDevice
from strata.stack.remote.serve import ServedTarget, serve_target
from strata.workloads import REGISTRY as WORKLOADS

from .part import BarrierStacks, Part, PartRequest

GO_TIMEOUT_S = 3600.0  # a part waits this long at its barrier for the manager's go
MAX_PARTS_KEPT = 64


class AgentError(Exception):
    """A request the agent refuses: (HTTP status, message)."""

    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(message)


def trial_from_resolved(doc: JsonObject) -> Trial:
    """The Trial a resolved dict describes (Trial.resolved() in reverse), without a placement."""
    wl = obj(doc, "workload")
    return Trial(
        TypeAdapter(Device).validate_python(doc["device"]),
        FilesystemParams.model_validate(doc["filesystem"]),
        TypeAdapter(Runtime).validate_python(doc["runtime"]),
        text(doc, "path"),
        WORKLOADS[text(wl, "type")].params.model_validate(wl),
        Load.model_validate(doc["load"]),
        whole(doc, "repetition") or 0,
    )


def shipped_files(params: Layer) -> dict[str, str]:
    """Files the workload's parameters name on this machine, to send with a part: {path: base64}."""
    out: dict[str, str] = {}
    for field in params.model_dump().values():
        for value in field if isinstance(field, list) else [field]:  # a list of files too (pgbench's scripts)
            if isinstance(value, str) and value.startswith("/") and Path(value).is_file():
                out[value] = base64.b64encode(Path(value).read_bytes()).decode()
    return out


def unship(resolved: JsonObject, files: JsonObject, where: Path) -> JsonObject:
    """The part's resolved trial with each shipped file written under `where` and named there."""
    wl = dict(obj(resolved, "workload"))

    def here(value: JsonValue) -> JsonValue:
        if not (isinstance(value, str) and value in files):
            return value
        d = where / hashlib.sha256(value.encode()).hexdigest()[:12]
        d.mkdir(parents=True, exist_ok=True)
        (d / Path(value).name).write_bytes(base64.b64decode(text(files, value)))
        return str(d / Path(value).name)

    for key, value in wl.items():
        wl[key] = [here(v) for v in value] if isinstance(value, list) else here(value)
    return {**resolved, "workload": wl}


class AgentRun:
    """One manager run on this host: its journal, its stacks, and where its parts keep their artifacts."""

    def __init__(self, run_id: str, agent: Agent):
        self.run_id = run_id
        self.root = agent.state_dir / "agent" / "runs" / run_id
        self.root.mkdir(parents=True, exist_ok=True)
        self.journal = Journal(f"{agent.host}-{run_id}", agent.state_dir / "agent")
        self.stacks = StackCache(self.journal, agent.workdir, agent.facts(), agent.registries)
        self.store = ResultStore(self.root)
        self.targets: dict[str, ServedTarget] = {}  # the stores this host serves to other hosts (storage.py)
        self.serving = contextlib.ExitStack()
        self.serving_lock = threading.Lock()

    def serve(self, device: JsonObject, workdir: Path, address: str) -> tuple[str, ServedTarget]:
        """(id, target) of the remote device's store served from here, started on first use."""
        spec = RemoteDevice.model_validate({**device, "served_at": None})
        key = hashlib.sha256(spec.model_dump_json().encode()).hexdigest()[:12]
        with self.serving_lock:
            if key not in self.targets:
                self.targets[key] = self.serving.enter_context(serve_target(spec, self.journal, workdir, address))
            return key, self.targets[key]

    def close(self) -> None:
        try:
            self.stacks.close()  # the clients on this host first, then the stores it serves
            self.serving.close()
        finally:
            self.journal.close()
            shutil.rmtree(self.root, ignore_errors=True)


class Agent:
    def __init__(
        self,
        host: str,
        workdir: Path,
        state_dir: Path,
        node: JsonObject | None = None,
        registries: Registries | None = None,
        address: str = "127.0.0.1",
    ):
        self.host, self.workdir, self.state_dir = host, workdir, state_dir
        self.address = address  # the node's own, where it serves remote devices' stores
        self.node = node or {}
        self.registries = registries or Registries()
        self.id = secrets.token_hex(6)  # a restarted agent answers with another id: its parts are gone
        self.runs: dict[str, AgentRun] = {}
        self.parts: dict[str, tuple[Part, str, Path]] = {}  # id -> (part, run id, part dir)
        self.lock = threading.Lock()
        self.busy = threading.Lock()  # one part at a time
        self.last_request = time.monotonic()
        self._facts: JsonObject | None = None

    # ---- what the manager asks about the host ----

    def health(self) -> JsonObject:
        return {"agent": self.id, "host": self.host, "version": __version__, "time": time.time(), **self.node}

    def facts(self) -> JsonObject:
        if self._facts is None:
            tools: JsonObject = {}
            for w in WORKLOADS.values():  # every workload's tools: a part may run any of them
                tools.update(w.versions())
            self._facts = {**host_facts(), "tools": tools, **self.node}
            os_release = Path("/etc/host-os-release")  # the node's own, mounted by the launcher
            if os_release.exists():
                for line in os_release.read_text().splitlines():
                    if line.startswith("PRETTY_NAME="):
                        self._facts["os"] = line.split("=", 1)[1].strip('"')
        return {**self._facts, "clock": clock.state()}

    def doctor(self, probe: bool) -> list[tuple[str, str, str | None]]:
        from strata.run.doctor import checks

        return checks(probe)

    # ---- parts ----

    def start_part(self, doc: JsonObject) -> JsonObject:
        req = PartRequest.from_json(doc)
        if not req.part or not req.run:
            raise AgentError(400, "a part needs its 'part' and 'run' ids")
        with self.lock:
            if req.part in self.parts:
                raise AgentError(409, f"part {req.part} exists")
            run = self.runs.get(req.run) or self.runs.setdefault(req.run, AgentRun(req.run, self))
            part = Part(req.part, self.host, GO_TIMEOUT_S if req.go_timeout_s is None else req.go_timeout_s)
            pdir = run.root / "parts" / req.part
            self.parts[part.id] = (part, run.run_id, pdir)
            self._forget_old_parts()
        threading.Thread(target=self._run_part, args=(part, run, pdir, req), daemon=True, name=part.id).start()
        return part.status()

    def _run_part(self, part: Part, run: AgentRun, pdir: Path, req: PartRequest) -> None:
        with self.busy:
            result = None
            try:
                trial = trial_from_resolved(unship(req.trial, req.files, pdir / "files"))
                result = self._unsupported(trial, req) or run_trial(
                    trial, BarrierStacks(run.stacks, part), run.store, req.run, req.experiment, self.facts()
                )
            except Exception as e:  # noqa: BLE001 - a bug or a bad part: the manager gets it as the part's failure
                import traceback

                result = failed_result(
                    Result(), "internal", f"host {self.host}: {type(e).__name__}: {e}", traceback.format_exc()
                )
            part.result = result
            part.set_state("done")

    def _unsupported(self, trial: Trial, req: PartRequest) -> Result | None:
        """What the plan checks locally before a run: whether this host can build each layer."""
        r = self.registries
        facts = self.facts()
        built = trial.workload_plugin.instances(trial.workload, trial.load) > 0  # else: only clients here
        problems = r.devices[trial.device.type].problems(trial.device) if built else []  # the destroy guard
        if problems:
            return self._refused(trial, req, facts, "provision", "; ".join(problems))
        layers = ((r.devices, trial.device), (r.filesystems, trial.filesystem), (r.runtimes, trial.runtime))
        for registry, params in (*(layers if built else ()), (WORKLOADS, trial.workload)):
            reason = registry[params.type].available(facts, params)
            if reason:
                return self._refused(trial, req, facts, "unsupported", reason, status="unsupported")
        return None

    def _refused(
        self, trial: Trial, req: PartRequest, facts: JsonObject, category: str, why: str, status: str = "failed"
    ) -> Result:
        result = base_result(trial, req.run, req.experiment, facts)
        result.started_at = result.finished_at = now_iso()
        return failed_result(result, category, f"host {self.host}: {why}", status=status)

    def part(self, part_id: str) -> tuple[Part, str, Path]:
        with self.lock:
            if part_id not in self.parts:
                raise AgentError(404, f"no part {part_id} on this agent (agent {self.id})")
            return self.parts[part_id]

    def part_state(self, part_id: str, want: str, timeout_s: float) -> JsonObject:
        part = self.part(part_id)[0]
        part.wait_state(want, min(timeout_s, 30.0))
        return {**part.status(), "agent": self.id}

    def part_result(self, part_id: str) -> dict[str, object]:
        part, run_id, _ = self.part(part_id)
        if part.result is None:
            raise AgentError(409, f"part {part_id} is {part.state}, not done")
        art = self._run(run_id).store.trials / part.result.trial_id
        outputs: JsonArray = [  # an OutputDoc each (part.output_doc reads them back)
            {
                "index": o.index,
                "out_dir": str(o.out_dir.relative_to(art)) if o.out_dir.is_relative_to(art) else o.out_dir.name,
                "returncode": o.returncode,
                "stderr": o.stderr,
                "start_time_s": o.start_time_s,
                "end_time_s": o.end_time_s,
                "facts": o.facts,
            }
            for o in part.outputs
        ]
        times: JsonObject = dict(part.times)
        return {"result": part.result.to_json(), "outputs": outputs, "times": times, "agent": self.id}

    def artifacts(self, part_id: str) -> Path:
        """A tar of the part's artifacts (its trial directory), made once."""
        part, run_id, pdir = self.part(part_id)
        if part.result is None:
            raise AgentError(409, f"part {part_id} is {part.state}, not done")
        tar = pdir / "artifacts.tar"
        if not tar.exists():
            run = self._run(run_id)
            src = run.store.trials / part.result.trial_id
            pdir.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=pdir, delete=False, suffix=".tmp") as f:
                with tarfile.open(fileobj=f, mode="w") as t:
                    if src.is_dir() and part.result.trial_id:
                        t.add(src, arcname=".")
            os.replace(f.name, tar)
        return tar

    def drop_part(self, part_id: str) -> None:
        part, run_id, pdir = self.part(part_id)
        if part.state != "done":
            raise AgentError(409, f"part {part_id} is still {part.state}")
        with self.lock:
            self.parts.pop(part_id, None)
        run = self.runs.get(run_id)
        if run and part.result and part.result.trial_id:
            shutil.rmtree(run.store.trials / part.result.trial_id, ignore_errors=True)
        shutil.rmtree(pdir, ignore_errors=True)

    def _run(self, run_id: str) -> AgentRun:
        run = self.runs.get(run_id)
        if run is None:
            raise AgentError(410, f"run {run_id} was closed on this agent")
        return run

    def _forget_old_parts(self) -> None:
        done = [pid for pid, (p, _, _) in self.parts.items() if p.state == "done"]
        for pid in done[: max(0, len(self.parts) - MAX_PARTS_KEPT)]:
            self.parts.pop(pid, None)

    def go(self, part_id: str, start_at: float) -> JsonObject:
        part = self.part(part_id)[0]
        part.go(start_at)
        return part.status()

    def release(self, part_id: str) -> JsonObject:
        part = self.part(part_id)[0]
        part.release()
        return part.status()

    def abort(self, part_id: str, reason: str) -> JsonObject:
        part = self.part(part_id)[0]
        part.abort(reason)
        return part.status()

    # ---- stores served to other hosts ----

    def serve_target(self, run_id: str, device: JsonObject) -> JsonObject:
        run = self.runs.get(run_id) or self.runs.setdefault(run_id, AgentRun(run_id, self))
        try:
            key, target = run.serve(device, self.workdir, self.address)
        except Unsupported as e:  # 422: the manager stores the trial as unsupported
            raise AgentError(422, f"host {self.host}: {e}")
        except Exception as e:  # noqa: BLE001 - a guard or a tool that failed: the manager's trial fails with it
            what = str(e) if isinstance(e, StrataError) else f"{type(e).__name__}: {e}"
            raise AgentError(500, f"host {self.host}: serving {device.get('name')}: {what}")
        return {"id": key, **target.to_json(), "agent": self.id}

    def target_stats(self, run_id: str, target_id: str) -> JsonObject:
        target = self._run(run_id).targets.get(target_id)
        if target is None:
            raise AgentError(404, f"no target {target_id} in run {run_id} on this agent (agent {self.id})")
        return {**target.stats(), "agent": self.id}

    # ---- runs, cleanup, shutdown ----

    def close_run(self, run_id: str) -> JsonObject:
        with self.busy:  # after the part that still runs
            with self.lock:
                run = self.runs.pop(run_id, None)
                for pid in [pid for pid, (_, rid, _) in self.parts.items() if rid == run_id]:
                    self.parts.pop(pid, None)
            if run:
                run.close()
        return {"closed": run_id, "existed": run is not None}

    def cleanup(self) -> JsonObject:
        """Undo what dead runs left on this host: agents' journals and local runs' journals (a live run's
        journal is left alone: its lock is held)."""
        lines: JsonArray = []
        undo = undo_actions()
        n = journal_cleanup(self.state_dir / "agent", log=lines.append, undo=undo)
        n += journal_cleanup(self.state_dir, log=lines.append, undo=undo)
        return {"undone": n, "log": lines}

    def cleanup_previous(self) -> JsonObject:
        """At start: undo what a previous agent on this host left (killed with its container)."""
        lines: JsonArray = []
        undone = journal_cleanup(self.state_dir / "agent", log=lines.append, undo=undo_actions())
        return {"undone": undone, "log": lines}

    def shutdown(self, reason: str) -> None:
        """Stop what runs (its part fails as host_lost), then tear every run's stacks down."""
        with self.lock:
            parts = [p for p, _, _ in self.parts.values() if p.state != "done"]
        for p in parts:
            p.abort(f"host {self.host}: the agent was stopped ({reason})")
        for p in parts:
            p.wait_state("done", 120)
        for run_id in list(self.runs):
            with contextlib.suppress(Exception):
                self.close_run(run_id)

    # ---- images ----

    def image_path(self, name: str) -> Path:
        from strata.stack.buildcache import images_dir

        if "/" in name or not name.endswith(".tar") or name.startswith("."):
            raise AgentError(400, f"{name!r} is not an image tarball name")
        return images_dir() / name
