"""Running external commands with their stderr kept for error messages."""

from __future__ import annotations

import subprocess

from strata.core.errors import StrataError


def sh(
    argv: list[str], *, check: bool = True, timeout: float = 600, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input)
    except FileNotFoundError:
        raise StrataError(
            f"`{argv[0]}` is not installed", "run scripts/install (or apt-get install the package that provides it)"
        )
    except subprocess.TimeoutExpired:
        raise CommandError(argv, -1, f"timed out after {timeout:.0f} s")
    if check and cp.returncode != 0:
        raise CommandError(argv, cp.returncode, cp.stderr.strip() or cp.stdout.strip())
    return cp


class CommandError(Exception):
    def __init__(self, argv: list[str], returncode: int, stderr: str) -> None:
        self.argv, self.returncode, self.stderr = argv, returncode, stderr
        super().__init__(f"`{' '.join(argv)}` exited {returncode}: {stderr[-2000:]}")
