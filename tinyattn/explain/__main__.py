"""``python -m tinyattn.explain``."""

from .mha import main

main()
