"""Task registry: name -> Task class."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.registry import Registry

TASKS: Registry[type] = Registry("task")


def _register_all() -> None:
    from seqbench.tasks.images import Digits, Fashion, PermutedDigits, PermutedFashion
    from seqbench.tasks.music import Chorales
    from seqbench.tasks.synthetic import Adding, CopyMemory, Teacher
    from seqbench.tasks.text import PTBChar, PTBWord, TextFile

    for cls in (
        Adding,
        CopyMemory,
        Digits,
        PermutedDigits,
        Fashion,
        PermutedFashion,
        Chorales,
        PTBChar,
        PTBWord,
        TextFile,
        Teacher,
    ):
        TASKS.register(cls.name, cls)


_register_all()


def make_task(name: str, args):
    """Instantiate task `name` with a TaskArgs; validates T."""
    cls = TASKS.get(name)
    if args.seq_len is not None and args.seq_len <= 0:
        raise UsageError(f"seq_len must be positive, got {args.seq_len}")
    if args.subset is not None and args.subset <= 0:
        raise UsageError(f"subset must be positive, got {args.subset}")
    return cls(args)
