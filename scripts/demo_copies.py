"""The demo's working copies: `make demo` serves copies of notebooks/, never the tracked files.

    python scripts/demo_copies.py notebooks demo-notebooks

copies each file of the first folder into the second (created if needed) when
the copy is missing or older than the original, and leaves a newer copy alone:
what you changed while playing with the demo stays, and the tracked notebooks
are never rewritten (autosave, a kernel's name, the outputs of a run). A
notebook changed in the repository (a pull) replaces its older copy. Delete
the folder to start afresh. Checkpoints and hidden files are not copied.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

__all__ = ["refresh"]


def refresh(source: Path, target: Path) -> list[str]:
    """Copy the files of `source` missing from `target` or newer than their copy; return their names."""
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for original in sorted(source.iterdir()):
        if original.name.startswith(".") or not original.is_file():
            continue
        copy = target / original.name
        if copy.exists() and copy.stat().st_mtime >= original.stat().st_mtime:
            continue
        shutil.copy2(original, copy)
        copied.append(original.name)
    return copied


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: demo_copies.py SOURCE_FOLDER TARGET_FOLDER", file=sys.stderr)
        return 2
    source, target = Path(argv[0]), Path(argv[1])
    if not source.is_dir():
        print(f"demo: {source} is not a folder", file=sys.stderr)
        return 1
    copied = refresh(source, target)
    kept = sum(1 for p in target.iterdir() if p.is_file() and not p.name.startswith(".")) - len(copied)
    counts = f"{len(copied)} copied, {max(kept, 0)} kept as you left them"
    print(f"  notebooks: working copies in {target}/ ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
