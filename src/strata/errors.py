"""The one user-facing error type (STYLE.md item 7).

A StrataError names what is wrong, where, and the fix; `strata` prints it and
exits 2. A failed trial is not an error of this kind: it is recorded as a
result with `flags.failed` and the run goes on.
"""

from __future__ import annotations


class StrataError(Exception):
    """A problem the user can fix: bad input, missing tool, unsafe device."""

    def __init__(self, problem: str, fix: str = "", where: str = ""):
        self.problem, self.fix, self.where = problem, fix, where
        super().__init__(self.message())

    def message(self) -> str:
        head = f"{self.where}: {self.problem}" if self.where else self.problem
        return f"{head}\n  fix: {self.fix}" if self.fix else head


class SpecErrors(StrataError):
    """Every error of a spec at once, each with its key path."""

    def __init__(self, errors: list[tuple[str, str, str]], source: str = "spec"):
        self.errors = errors  # (key path, problem, fix)
        lines = [f"{source}: {len(errors)} error(s)"]
        for path, problem, fix in errors:
            lines.append(f"  {path or '<top>'}: {problem}" + (f"\n      fix: {fix}" if fix else ""))
        super().__init__("\n".join(lines))

    def message(self) -> str:  # the problem text is already complete
        return self.problem


class TrialFailure(Exception):
    """A trial could not produce a measurement; recorded, never fatal to the run."""

    def __init__(self, category: str, message: str, stderr: str = ""):
        self.category, self.stderr = category, stderr
        super().__init__(message)
