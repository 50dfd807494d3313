"""strata: characterize the storage performance of containerized applications.

See docs/architecture.md: a *stack* (device -> filesystem ->
runtime -> path) runs a *workload* under a *load*; every *trial* is stored as one
result file with validity flags.
"""

__version__ = "0.1.0"
