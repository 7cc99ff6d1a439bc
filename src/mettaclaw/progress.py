"""One progress bar for long work (indexing priors, dreaming): rich's, shown only when asked for.

Why a function: every caller gets the same transient bar that disappears when done, and a disabled
one costs nothing, so the callers' loops need no `if show` of their own.
"""

from __future__ import annotations

from typing import Any

from mettaclaw.textutil import one_line


def progress_bar(enabled: bool) -> Any:
    """A rich `Progress` to use as a context manager (`disable`d unless `enabled`)."""
    from rich.progress import Progress

    return Progress(disable=not enabled, transient=True)


def label(text: str) -> str:
    """`text` shown as it is in a bar's description: rich reads `[...]` there as markup, so a prior
    named `notes[/b].md` ended start-up in a MarkupError and `[red]x.md` was shown as a red `x.md`;
    and it writes control characters through, so a name holding an escape sequence cleared the
    terminal or set its title, and one holding a newline broke the bar in two (textutil.one_line)."""
    from rich.markup import escape

    return escape(one_line(text))
