"""The agent's HTTP API: JSON over HTTP/1.1 on one address of the node, every request with the run's token.

The manager is the only client. Routes (all under /v1; every one but
`health` needs `Authorization: Bearer TOKEN`, the secret the manager made for
its agents):

    GET    health                      agent id, host, version, clock (no token: liveness only)
    GET    time                        this host's wall clock (the manager's offset estimate)
    GET    facts                       host facts, tool versions, clock state
    GET    doctor?probe=0|1            `strata doctor` rows of this host
    POST   parts                       start a part of a trial (part.py)
    GET    parts/ID?wait=STATE&timeout=S   the part's state, once it reached STATE or S passed
    POST   parts/ID/go                 {"start_at": t}: release at t (this host's clock)
    POST   parts/ID/release            every part measured: a measured part may stop its servers
    POST   parts/ID/abort              {"reason": ...}
    GET    parts/ID/result             the part's stored result and its instances' outputs
    GET    parts/ID/artifacts          a tar of the part's artifacts
    DELETE parts/ID                    forget a part and its artifacts
    POST   runs/RUN/close              tear down the stacks of a run (and the stores it serves)
    POST   runs/RUN/targets            {"device": ...}: serve a remote device's store from this host
    GET    runs/RUN/targets/ID         the served store's I/O counters and disks' diskstats
    POST   cleanup                     undo what dead runs left on this host
    HEAD   images/NAME, PUT images/NAME   an image tarball in this host's image cache

The server binds one address, never a wildcard: the node's own, on the
network the Swarm uses, or loopback.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import re
import shutil
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qs, urlparse

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, ShapeError, as_obj, num, obj, text

from .agent import Agent, AgentError

MAX_JSON_BYTES = 64 << 20  # a part carries its workload's files
MAX_IMAGE_BYTES = 64 << 30
CHUNK = 1 << 20


def check_listen(address: str) -> None:
    """One address of this node, never all of them."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise StrataError(f"{address!r} is not an IP address", "give the node's address, e.g. 192.0.2.10")
    if ip.is_unspecified:
        raise StrataError(
            f"the agent does not listen on every address ({address})",
            "give the node's address on the Swarm's network, or 127.0.0.1",
        )


class Handler(BaseHTTPRequestHandler):
    server: AgentServer
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: object) -> None:  # quiet: the manager logs what matters
        pass

    # ---- plumbing ----

    def _send(self, status: int, doc: object) -> None:
        body = json.dumps(doc, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> JsonObject:
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_JSON_BYTES:
            raise AgentError(413, f"request of {n} bytes (at most {MAX_JSON_BYTES})")
        return as_obj(json.loads(self.rfile.read(n) or b"{}"), "the request")

    def _authorized(self) -> bool:
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self.server.token}".encode())

    def _dispatch(self, method: str) -> None:
        url = urlparse(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            if url.path == "/v1/health" and method == "GET":
                return self._send(200, self.server.agent.health())
            if not self._authorized():
                self._drain()
                return self._send(401, {"error": "missing or wrong token"})
            self.server.agent.last_request = time.monotonic()
            for pattern, route_method, fn in ROUTES:
                m = re.fullmatch(pattern, url.path)
                if m and route_method == method:
                    fn(self, query, *m.groups())
                    return
            self._drain()
            self._send(404, {"error": f"no route {method} {url.path}"})
        except AgentError as e:
            self._send(e.status, {"error": str(e), "agent": self.server.agent.id})
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _drain(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        while n > 0:
            n -= len(self.rfile.read(min(n, CHUNK)) or b"x" * n)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    # ---- routes ----

    def r_time(self, q: dict[str, str]) -> None:
        self._send(200, {"time": time.time(), "agent": self.server.agent.id})

    def r_facts(self, q: dict[str, str]) -> None:
        self._send(200, self.server.agent.facts())

    def r_doctor(self, q: dict[str, str]) -> None:
        self._send(200, {"rows": self.server.agent.doctor(q.get("probe") == "1")})

    def r_start(self, q: dict[str, str]) -> None:
        self._send(201, self.server.agent.start_part(self._body()))

    def r_state(self, q: dict[str, str], part: str) -> None:
        self._send(200, self.server.agent.part_state(part, q.get("wait", "starting"), float(q.get("timeout", 0))))

    def r_go(self, q: dict[str, str], part: str) -> None:
        self._send(200, self.server.agent.go(part, _start_at(self._body())))

    def r_release(self, q: dict[str, str], part: str) -> None:
        self._send(200, self.server.agent.release(part))

    def r_abort(self, q: dict[str, str], part: str) -> None:
        self._send(200, self.server.agent.abort(part, text(self._body(), "reason", "aborted by the manager")))

    def r_result(self, q: dict[str, str], part: str) -> None:
        self._send(200, self.server.agent.part_result(part))

    def r_artifacts(self, q: dict[str, str], part: str) -> None:
        tar = self.server.agent.artifacts(part)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-tar")
        self.send_header("Content-Length", str(tar.stat().st_size))
        self.end_headers()
        with open(tar, "rb") as f:
            shutil.copyfileobj(f, self.wfile, CHUNK)

    def r_drop(self, q: dict[str, str], part: str) -> None:
        self.server.agent.drop_part(part)
        self._send(200, {"dropped": part})

    def r_close(self, q: dict[str, str], run: str) -> None:
        self._send(200, self.server.agent.close_run(run))

    def r_serve(self, q: dict[str, str], run: str) -> None:
        self._send(201, self.server.agent.serve_target(run, obj(self._body(), "device")))

    def r_target(self, q: dict[str, str], run: str, target: str) -> None:
        self._send(200, self.server.agent.target_stats(run, target))

    def r_cleanup(self, q: dict[str, str]) -> None:
        self._send(200, self.server.agent.cleanup())

    def r_image_head(self, q: dict[str, str], name: str) -> None:
        exists = self.server.agent.image_path(name).exists()
        self.send_response(200 if exists else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def r_image_put(self, q: dict[str, str], name: str) -> None:
        path = self.server.agent.image_path(name)
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_IMAGE_BYTES:
            raise AgentError(413, f"image of {n} bytes")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(tmp, "wb") as f:
                left = n
                while left > 0:
                    chunk = self.rfile.read(min(left, CHUNK))
                    if not chunk:
                        raise AgentError(400, "the upload ended early")
                    f.write(chunk)
                    left -= len(chunk)
            os.replace(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)
        self._send(201, {"stored": name, "bytes": n})


def _start_at(body: JsonObject) -> float:
    start_at = num(body, "start_at")
    if start_at is None:
        raise ShapeError("'start_at' should be a number, not missing")
    return start_at


PART = r"/v1/parts/([A-Za-z0-9_.-]+)"
ROUTES: list[tuple[str, str, Callable[..., None]]] = [
    (r"/v1/time", "GET", Handler.r_time),
    (r"/v1/facts", "GET", Handler.r_facts),
    (r"/v1/doctor", "GET", Handler.r_doctor),
    (r"/v1/parts", "POST", Handler.r_start),
    (PART, "GET", Handler.r_state),
    (PART + "/go", "POST", Handler.r_go),
    (PART + "/release", "POST", Handler.r_release),
    (PART + "/abort", "POST", Handler.r_abort),
    (PART + "/result", "GET", Handler.r_result),
    (PART + "/artifacts", "GET", Handler.r_artifacts),
    (PART, "DELETE", Handler.r_drop),
    (r"/v1/runs/([A-Za-z0-9_.-]+)/close", "POST", Handler.r_close),
    (r"/v1/runs/([A-Za-z0-9_.-]+)/targets", "POST", Handler.r_serve),
    (r"/v1/runs/([A-Za-z0-9_.-]+)/targets/([0-9a-f]+)", "GET", Handler.r_target),
    (r"/v1/cleanup", "POST", Handler.r_cleanup),
    (r"/v1/images/([A-Za-z0-9_.:-]+)", "HEAD", Handler.r_image_head),
    (r"/v1/images/([A-Za-z0-9_.:-]+)", "PUT", Handler.r_image_put),
]


class AgentServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, agent: Agent, address: str, port: int, token: str):
        check_listen(address)
        if not token:
            raise StrataError("the agent needs a token", "the manager passes one through a Swarm secret")
        self.agent, self.token = agent, token
        self.address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
        super().__init__((address, port), Handler)
