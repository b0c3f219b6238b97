"""Every op of tinyattn, each a ``Function`` with its forward and backward side by side.

- ``elementwise.py``: ``+ - * / **``, ``exp log sqrt tanh relu sigmoid abs``, ``where``, ``masked_fill``
- ``matmul.py``: ``@``
- ``reduction.py``: ``sum mean amax var``
- ``shape.py``: ``reshape transpose permute unsqueeze squeeze expand``, indexing, ``cat stack split``
- ``softmax.py``: ``softmax log_softmax``
"""
