"""`seqbench stress`: gradient vs lag, rates and verdicts, spectra, truncation error vs k."""
