"""Every analysis writes NAME.json (the numbers), NAME.md (a markdown table) and, where the paper
has a figure, NAME.png, each atomically and never over an existing file unless asked."""

import json
import os
from typing import Any, Dict, List, Optional, Sequence

from elmo_bilm.utils.files import atomic_output


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """`rows` under `header` as a Markdown table."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_report(
    output_dir: str,
    name: str,
    result: Dict[str, Any],
    table: str,
    figure: Optional[Any] = None,
    overwrite: bool = False,
) -> List[str]:
    """Write the report files; returns their paths. `figure` is a matplotlib Figure."""
    os.makedirs(output_dir, exist_ok=True)
    paths = [os.path.join(output_dir, f"{name}.{ext}") for ext in ("json", "md", "png")]
    if not overwrite:
        existing = [p for p in paths[: 3 if figure is not None else 2] if os.path.exists(p)]
        if existing:
            raise FileExistsError(f"{existing[0]} exists; pass --overwrite to replace it")
    # UTF-8 as written: a Russian corpus's neighbours read as words, not \uXXXX escapes
    with (
        atomic_output(paths[0], overwrite) as partial,
        open(partial, "w", encoding="utf-8") as handle,
    ):
        json.dump(result, handle, indent=2, ensure_ascii=False)
    with (
        atomic_output(paths[1], overwrite) as partial,
        open(partial, "w", encoding="utf-8") as handle,
    ):
        handle.write(table)
    if figure is None:
        return paths[:2]
    with atomic_output(paths[2], overwrite) as partial:
        figure.savefig(partial, format="png", dpi=120, bbox_inches="tight")
    return paths


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no display here)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
