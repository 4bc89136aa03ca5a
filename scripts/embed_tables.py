"""Refresh the generated tables in a markdown document in place.

A block written as

    <!-- BEGIN docs/reproductions/small/bai-tcn.md -->
    ...anything...
    <!-- END -->

gets the current contents of that file between its markers. Used by scripts/reproduce.sh so
that docs/reproductions.md always shows the tables that `seqbench report` printed.

    python scripts/embed_tables.py docs/reproductions.md
"""

import re
import sys
from pathlib import Path

BLOCK = re.compile(r"(<!-- BEGIN (\S+) -->\n)(.*?)(<!-- END -->)", re.S)


def embed(doc: Path) -> int:
    root = Path.cwd()
    count = 0

    def fill(m: re.Match) -> str:
        nonlocal count
        src = root / m.group(2)
        if not src.is_file():
            return m.group(0)  # not generated at this scale yet: leave the block as it is
        count += 1
        return m.group(1) + src.read_text().rstrip("\n") + "\n" + m.group(4)

    doc.write_text(BLOCK.sub(fill, doc.read_text()))
    return count


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(f"{path}: {embed(Path(path))} tables refreshed")
