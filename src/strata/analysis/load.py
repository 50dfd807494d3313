"""Results for the analysis: the store's loader (one implementation, in store.py)."""

from strata.store import load_results as load, read_bytes, results_dirs  # noqa: F401
