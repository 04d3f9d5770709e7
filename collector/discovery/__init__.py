"""Discovery: a pid -> the server's binary, version, symbols and debug files -> the catalog's
probes resolved to addresses (and the C library's frame tables for its stacks)."""
