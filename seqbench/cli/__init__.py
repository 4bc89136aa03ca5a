"""The command line: typer commands over seqbench.api.

The commands' modules import `seqbench.api`, which imports nothing of the library until one
of its names is used, so `seqbench --help` and a command's `--help` do not pay for it."""
