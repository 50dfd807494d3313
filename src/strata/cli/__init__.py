"""One module per subcommand (STYLE.md item 6); each maps arguments onto one library call."""
