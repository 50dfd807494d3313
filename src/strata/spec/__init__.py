"""Specs: parse, validate, resolve, expand (STYLE.md item 4)."""
