"""Homework scaffolding: task markers in the source become assignments, graded by marked tests.

See ``docs/teaching.md`` and ``python -m tinyattn.homework --help``.
"""
