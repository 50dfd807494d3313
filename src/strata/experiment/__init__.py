"""Experiments: parse, validate, resolve, expand (docs/architecture.md "Experiments")."""
