"""Every op of tinyattn, each a ``Function`` on arrays with its forward and backward side by side.

- ``elementwise.py``: ``Add Sub Mul Div Pow Neg Cast MaskedFill Where Clone Copy``, and every one-input op
  built on ``Elementwise`` (``Exp``, ``Log``, ``Tanh``, ``GELUFn``...), each ``f`` and its derivative ``f'``,
  stated once
- ``matmul.py``: ``MatMul LinearFn Einsum``
- ``reduction.py``: ``Sum Mean Amax TakeAlong Var Norm``
- ``shape.py``: ``Reshape Transpose Permute Unsqueeze Squeeze Expand GetItem Cat Stack Triangle Gather SetItem``
- ``softmax.py``: ``Softmax LogSoftmax``
- ``windows.py``: ``Windows``
- ``flash_attention.py``: ``FlashAttention PackedFlashAttention``

``FlashAttention`` is ``softmax(Q Kᵀ · scale + M) V`` as one op that never stores ``P``
(``PackedFlashAttention``: the same on Q, K and V stacked in one array). ``Windows`` lays out the
patches a kernel sees, beneath convolution and pooling.
A Function whose name a Module also has (``nn.Linear``, ``nn.ReLU``, ``nn.GELU``) ends in
``Fn``. No op imports ``Tensor``: ``Function.apply`` gives them arrays and wraps what they return. A
backward is written in operations that arrays and tensors share, so that it also runs on tensors, recorded
like any forward, when a gradient is itself differentiated (a second derivative). ``shared.py`` holds
what they share: ``unbroadcast`` and the two helpers for a backward on arrays or tensors.
"""
