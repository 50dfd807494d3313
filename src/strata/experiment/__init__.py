"""Experiments: parse, validate, resolve, expand (docs/architecture.md "Experiments"), and the limit
presets a load names (presets), which the expansion resolves against this host."""
