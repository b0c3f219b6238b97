"""The gradient-flow explainer, beside the library: it reads a backward pass, it is not part of one.

* ``trace()`` (``trace.py``): ``with trace() as steps:`` records the forward's
  tensor names and every op's backward as a readable ``Step``.
* ``graph.py``: a picture (matplotlib) or Graphviz DOT of a trace.
* ``mha.py``: ``python -m tinyattn.explain``, the walkthrough of MultiheadAttention.
* ``notebook.py``: ``walkthrough(...)`` and ``show_heatmaps(...)`` for notebooks; ``page.py``: the HTML page.
"""

from .mha import main
from .notebook import Walkthrough, show_heatmaps, walkthrough
from .trace import Step, Trace, trace

__all__ = ["Step", "Trace", "Walkthrough", "main", "show_heatmaps", "trace", "walkthrough"]
