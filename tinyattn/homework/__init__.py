"""Homework scaffolding: task markers in the source become assignments, graded by marked tests.

The instructor's guide: ``python -m tinyattn.homework guide`` (docs/teaching.md); ``--help`` for the commands.
"""
