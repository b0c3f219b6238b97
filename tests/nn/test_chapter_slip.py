"""Why the chapter's ``query.view(...)`` is a bug, shown by the checks this project relies on.

With the slip, W^Q, W^K, W^V get no gradient at all (backward never reaches
them) and the output disagrees with a reference MultiheadAttention holding
the same weights. With the corrected line, both checks pass.
"""

import numpy as np
import pytest

import tinyattn as ta
from tests.nn.chapter_module import ChapterMHA
from tinyattn import nn


def run(slip):
    ta.manual_seed(0)
    model = ChapterMHA(16, 2, slip=slip, dtype=ta.float64)
    x = ta.tensor(np.random.default_rng(0).standard_normal((3, 5, 16)), requires_grad=True)
    out, _ = model(x, x, x)
    out.backward(np.random.default_rng(1).standard_normal(out.shape))
    return model, x, out


@pytest.mark.parametrize("slip", [True, False])
def test_projection_weights_get_gradient_only_without_the_slip(slip):
    model, _, _ = run(slip)
    for proj in (model.q_proj, model.k_proj, model.v_proj):
        received = proj.weight.grad is not None and np.any(proj.weight.grad != 0)  # None: never reached
        assert received != slip
    assert np.any(model.out_proj.weight.grad != 0)


@pytest.mark.parametrize("slip", [True, False])
def test_output_matches_reference_mha_only_without_the_slip(slip):
    model, x, out = run(slip)
    reference = nn.MultiheadAttention(16, 2, batch_first=True, dtype=ta.float64)
    reference.load_state_dict(model.packed_state_dict())
    expected, _ = reference(x, x, x)
    assert np.allclose(out.array, expected.array, rtol=1e-10, atol=1e-12) != slip
