"""The built-in model families, one file each: the family's ModelSpec (models/spec.py) as
SPEC, what seqbench knows of it without torch: its defaults and the papers' per task, its
checks, its context rule, whether --stable applies, its optimiser groups and its memory
estimate. Its network (with the stability projection and the spectra stress reads) is the
module its builder names. seqbench.models collects every module here; a new family is a file
here and its network's file."""
