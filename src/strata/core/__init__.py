"""The vocabulary every layer shares, below all of them: the user-facing error (errors), units and sizes
(units), a trial's load and limits (params), the contract between a workload and the runtime that runs its
instances (instances), running a command (proc), the host's facts (host), the declaration of a workload's
result fields (metrics). Nothing here imports another package of strata."""
