"""The local results dashboard (`seqbench ui`)."""
