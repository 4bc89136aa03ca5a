"""Sweeps: grids of training runs that resume, survive crashes, and run on a process pool or Ray."""
