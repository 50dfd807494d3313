"""Results for the analysis: the store's loader (one implementation, in store.py)."""

from strata.results.store import load_results as load
from strata.results.store import read_bytes, results_dirs

__all__ = ["load", "read_bytes", "results_dirs"]
