"""Text that comes from the student's side, made safe once, where it enters the grader.

Whatever the student's code can shape reaches two places: ``results.json``, which must be
valid UTF-8 JSON, and the instructor's terminal. That is its exceptions' types, messages
and traceback names, its output, its file names and the lines of its files. ``text`` is the
one door they all come through (the results channel, the child's output, the submission's
files), so nothing past it needs to think about them again:

* a lone surrogate (``"\\ud800"``: a JSON escape, or an undecodable byte of a file name)
  cannot be written as UTF-8; each becomes U+FFFD;
* control characters (terminal escapes, a carriage return that overwrites a line, NUL) and
  the bidirectional overrides that make text read differently from what it is become U+FFFD;
  newlines and tabs stay;
* with ``limit``, the text is cut to that many characters and says how many were dropped.
"""

from __future__ import annotations

import re

# Surrogates (alone, they are no character), C0 controls but tab and newline, DEL, C1 controls, and the
# bidirectional embeddings, overrides and isolates
_UNSAFE = re.compile("[\ud800-\udfff\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def text(value: str, limit: int | None = None) -> str:
    """``value`` with lone surrogates and unsafe characters replaced by U+FFFD, cut to ``limit`` characters."""
    if not isinstance(value, str):
        raise TypeError(f"untrusted.text: expected a str, got {type(value).__name__}")
    safe = _UNSAFE.sub("\ufffd", value)
    if limit is not None and len(safe) > limit:
        safe = safe[:limit] + f" [... {len(safe) - limit} more characters]"
    return safe
