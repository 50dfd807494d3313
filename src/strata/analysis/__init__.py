"""Analysis of stored results: validity, baselines, statistics, findings, advice."""
