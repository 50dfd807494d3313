"""A small Kubernetes API client: JSON over HTTPS, nothing else.

strata talks to the test bed's apiserver or a user's with what a kubeconfig gives: certificate files, a
bearer token, or an exec credential plugin (credentials.py); no kubectl, no client library.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Callable, Mapping, TypeVar

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, arr, as_obj, obj, text
from strata.stack.kube.credentials import ExecPlugin

T = TypeVar("T")


class ApiError(Exception):
    def __init__(self, status: int, body: str):
        self.status, self.body = status, body
        super().__init__(f"HTTP {status}: {body[:500]}")


@dataclass
class Api:
    server: str
    ca: str | None  # None: the system's trust store
    cert: str | None = None  # a client certificate and key, or
    key: str | None = None
    token: str | None = None  # a bearer token (a user's kubeconfig)
    plugin: ExecPlugin | None = None  # an exec credential plugin: its token or certificate, asked when due

    def _context(self, cert: str | None, key: str | None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca)
        if cert and key:
            ctx.load_cert_chain(cert, key)
        return ctx

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, object] | bytes | None = None,
        timeout: float = 30,
        headers: Mapping[str, str] | None = None,
    ) -> str:
        """The API's answer as text (a pod's log, /readyz); `body` is sent as JSON (bytes as they are)."""
        return self.raw(method, path, body, timeout, headers).decode(errors="replace")

    def raw(
        self,
        method: str,
        path: str,
        body: Mapping[str, object] | bytes | None = None,
        timeout: float = 30,
        headers: Mapping[str, str] | None = None,
    ) -> bytes:
        """The API's answer as bytes; a credential the API refuses (401) is asked of its plugin once more."""
        try:
            return self._send(method, path, body, timeout, headers)
        except ApiError as e:
            if e.status != 401 or self.plugin is None:
                raise
            self.plugin.forget()
            return self._send(method, path, body, timeout, headers)

    def _send(
        self,
        method: str,
        path: str,
        body: Mapping[str, object] | bytes | None,
        timeout: float,
        headers: Mapping[str, str] | None,
    ) -> bytes:
        data = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None and not isinstance(body, bytes):
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        token, cert, key = self.token, self.cert, self.key
        if self.plugin is not None:
            c = self.plugin.credential()
            token, cert, key = c.token or token, c.cert or cert, c.key or key
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, context=self._context(cert, key), timeout=timeout) as resp:
                answer: bytes = resp.read()
                return answer
        except urllib.error.HTTPError as e:
            raise ApiError(e.code, e.read().decode(errors="replace"))

    def call(self, method: str, path: str, body: Mapping[str, object] | None = None, timeout: float = 30) -> JsonObject:
        """The object the API answered (an empty answer is an empty object)."""
        text = self.request(method, path, body, timeout)
        return as_obj(json.loads(text), f"the answer to {method} {path}") if text else {}

    def get(self, path: str, timeout: float = 30) -> JsonObject:
        return self.call("GET", path, timeout=timeout)

    def text(self, path: str, timeout: float = 30) -> str:
        """GET `path` as text (a pod's log, /readyz)."""
        return self.request("GET", path, timeout=timeout)

    def post(self, path: str, body: Mapping[str, object], timeout: float = 30) -> JsonObject:
        return self.call("POST", path, body, timeout)

    def delete(self, path: str, timeout: float = 30) -> JsonObject:
        return self.call("DELETE", path, timeout=timeout)

    def gone(self, path: str) -> bool:
        """True once GET `path` answers 404."""
        try:
            self.get(path)
        except ApiError as e:
            if e.status == 404:
                return True
            raise
        return False

    def answers(self) -> bool:
        try:
            return self.text("/readyz", timeout=5).strip() == "ok"
        except (OSError, ApiError, ssl.SSLError):
            return False

    def wait(self, what: str, test: Callable[[], T], timeout_s: float, fix: str, poll_s: float = 0.5) -> T:
        """Poll `test()` (which may raise ApiError/OSError while things start) until it returns a truthy value."""
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            try:
                got = test()
                if got:
                    return got
            except (OSError, ApiError, ssl.SSLError) as e:
                last = str(e)
            time.sleep(poll_s)
        raise StrataError(f"{what} within {timeout_s:.0f} s{f' (last: {last[:300]})' if last else ''}", fix)


def items(answer: JsonObject) -> list[JsonObject]:
    """The objects of a list the API answered (`items`)."""
    return [as_obj(i, "an item") for i in arr(answer, "items")]


def name_of(o: JsonObject) -> str:
    """An object's metadata.name."""
    return text(obj(o, "metadata"), "name")
