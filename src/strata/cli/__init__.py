"""One module per subcommand (docs/style.md, item 6); each maps arguments onto one library call. Also what
the CLI stores for the cells a host cannot run (unsupported)."""
