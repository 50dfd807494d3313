"""Stack layers: device -> filesystem -> runtime -> path (DESIGN.md "The stack")."""
