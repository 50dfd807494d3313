"""A trial's result: its validity flags, each a typed value with one codec (flags), the judgements that set
them from evidence (validity, with SNIA's steady-state criterion in steady), the stored format and its
version (schema), the result store (store) and the export to CSV and Parquet (export). Above the stack and
the workloads, whose facts a result holds; below the analysis and the run, which read and write results."""
