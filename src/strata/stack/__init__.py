"""Stack layers: device -> filesystem -> runtime -> path (docs/architecture.md "The stack")."""
