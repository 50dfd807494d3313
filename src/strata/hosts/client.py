"""The manager's side of the agent's HTTP API (server.py), with the two failures the manager tells apart.

`AgentUnreachable`: no answer at all (refused, reset, timed out): the host may
be lost, which the barrier decides from how long it lasts. `AgentRefused`: an
answer that says no (a part the agent does not know, a bad request): the
agent is there, and the HTTP status says what it means.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import BinaryIO

from strata.core.jsondoc import JsonArray, JsonObject, ShapeError, arr, as_obj, num
from strata.hosts import clock

TIMEOUT_S = 10.0
CHUNK = 1 << 20


class AgentUnreachable(Exception):
    """The agent did not answer."""


class AgentRefused(Exception):
    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(f"HTTP {status}: {message}")


# what a request sends: JSON (a dict or a list), or a file it streams (an image)
Body = JsonObject | JsonArray | BinaryIO | None


class AgentClient:
    def __init__(self, url: str, token: str, host: str = ""):
        self.url, self.token, self.host = url.rstrip("/"), token, host

    def _request(
        self,
        method: str,
        path: str,
        body: Body = None,
        timeout: float = TIMEOUT_S,
        headers: dict[str, str] | None = None,
    ) -> http.client.HTTPResponse:
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if isinstance(body, (dict, list)):
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            resp: http.client.HTTPResponse = urllib.request.urlopen(req, timeout=timeout)
            return resp
        except urllib.error.HTTPError as e:
            try:
                message = as_obj(json.loads(e.read() or b"{}")).get("error", e.reason)
            except ValueError:  # not JSON, or not an object (ShapeError is a ValueError)
                message = str(e.reason)
            raise AgentRefused(e.code, str(message))
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = e.reason if isinstance(e, urllib.error.URLError) else e
            raise AgentUnreachable(f"{self.url}: {reason}")

    def json(self, method: str, path: str, body: Body = None, timeout: float = TIMEOUT_S) -> JsonObject:
        with self._request(method, path, body, timeout) as r:
            try:
                return as_obj(json.loads(r.read()), f"{self.url}{path}'s answer")
            except (OSError, http.client.HTTPException, socket.timeout) as e:
                raise AgentUnreachable(f"{self.url}: {e}")

    # ---- the API ----

    def health(self, timeout: float = 3.0) -> JsonObject:
        return self.json("GET", "/v1/health", timeout=timeout)

    def facts(self) -> JsonObject:
        return self.json("GET", "/v1/facts", timeout=120)

    def doctor(self, probe: bool) -> list[tuple[str, str, str | None]]:
        """(layer, plugin, reason or None) per plugin, as the agent's host checks them."""
        return [doctor_row(r) for r in arr(self.json("GET", f"/v1/doctor?probe={int(probe)}", timeout=600), "rows")]

    def offset(self, rounds: int = 5) -> clock.Offset:
        samples = []
        for _ in range(rounds):
            t0 = time.time()
            ta = num(self.json("GET", "/v1/time", timeout=5), "time")
            if ta is None:
                raise ShapeError("the agent's time answer has no 'time'")
            samples.append((t0, ta, time.time()))
        return clock.estimate(samples)

    def start_part(self, doc: JsonObject) -> JsonObject:
        return self.json("POST", "/v1/parts", doc, timeout=60)

    def part(self, part_id: str, wait: str, timeout_s: float) -> JsonObject:
        return self.json("GET", f"/v1/parts/{part_id}?wait={wait}&timeout={timeout_s}", timeout=timeout_s + TIMEOUT_S)

    def go(self, part_id: str, start_at: float) -> JsonObject:
        return self.json("POST", f"/v1/parts/{part_id}/go", {"start_at": start_at})

    def release(self, part_id: str) -> JsonObject:
        return self.json("POST", f"/v1/parts/{part_id}/release")

    def abort(self, part_id: str, reason: str) -> JsonObject:
        return self.json("POST", f"/v1/parts/{part_id}/abort", {"reason": reason})

    def result(self, part_id: str) -> JsonObject:
        return self.json("GET", f"/v1/parts/{part_id}/result", timeout=60)

    def artifacts(self, part_id: str, into: Path) -> None:
        """The part's artifacts, unpacked into `into` (nothing outside it: the tar filter refuses)."""
        into.mkdir(parents=True, exist_ok=True)
        tmp = into / ".artifacts.tar"
        try:
            with self._request("GET", f"/v1/parts/{part_id}/artifacts", timeout=600) as r, open(tmp, "wb") as f:
                while chunk := r.read(CHUNK):
                    f.write(chunk)
            with tarfile.open(tmp) as t:
                t.extractall(into, filter="data")
        except (OSError, http.client.HTTPException, socket.timeout, tarfile.TarError) as e:
            if isinstance(e, (AgentUnreachable, AgentRefused)):
                raise
            raise AgentUnreachable(f"{self.url}: the artifacts did not arrive: {e}")
        finally:
            tmp.unlink(missing_ok=True)

    def drop(self, part_id: str) -> None:
        self.json("DELETE", f"/v1/parts/{part_id}")

    def close_run(self, run_id: str) -> JsonObject:
        return self.json("POST", f"/v1/runs/{run_id}/close", {}, timeout=900)

    def serve_target(self, run_id: str, device: JsonObject) -> JsonObject:
        """Serve a remote device's store from this host (filling its backing file takes a while)."""
        return self.json("POST", f"/v1/runs/{run_id}/targets", {"device": device}, timeout=1800)

    def target_stats(self, run_id: str, target_id: str) -> JsonObject:
        return self.json("GET", f"/v1/runs/{run_id}/targets/{target_id}")

    def cleanup(self) -> JsonObject:
        return self.json("POST", "/v1/cleanup", {}, timeout=900)

    def has_image(self, name: str) -> bool:
        try:
            with self._request("HEAD", f"/v1/images/{name}"):
                return True
        except AgentRefused as e:
            if e.status == 404:
                return False
            raise

    def put_image(self, path: Path) -> None:
        size = path.stat().st_size
        with open(path, "rb") as f:
            self._request(
                "PUT",
                f"/v1/images/{path.name}",
                f,
                timeout=1800,
                headers={"Content-Length": str(size), "Content-Type": "application/x-tar"},
            ).close()

    def __repr__(self) -> str:
        return f"AgentClient({self.host or self.url})"


def doctor_row(v: object) -> tuple[str, str, str | None]:
    """One row of an agent's doctor answer: [layer, plugin, reason or null]."""
    if not (isinstance(v, list) and len(v) == 3 and all(isinstance(x, str) for x in v[:2])):
        raise ShapeError(f"a doctor row should be [layer, plugin, reason], not {v!r}")
    layer, plugin, reason = v
    if reason is not None and not isinstance(reason, str):
        raise ShapeError(f"a doctor row's reason should be a string or null, not {reason!r}")
    return str(layer), str(plugin), reason


def env_timeout(name: str, default: float) -> float:
    """A timeout a user (or a test) may shorten or lengthen through the environment."""
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default
