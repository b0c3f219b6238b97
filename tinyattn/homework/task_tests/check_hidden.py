"""Hidden tests: each task's probe against the values the reference computed at assignment time."""

import probes
import pytest
from conftest import assert_matches_reference


@pytest.mark.task(id="unbroadcast", points=2)
def test_unbroadcast_reference(reference):
    assert_matches_reference(probes.unbroadcast(), reference, "unbroadcast")


@pytest.mark.task(id="matmul_backward", points=2)
def test_matmul_backward_reference(reference):
    assert_matches_reference(probes.matmul_backward(), reference, "matmul_backward")


@pytest.mark.task(id="linear_forward", points=1)
def test_linear_forward_reference(reference):
    assert_matches_reference(probes.linear_forward(), reference, "linear_forward")


@pytest.mark.task(id="shape_backward", points=1)
def test_shape_backward_reference(reference):
    assert_matches_reference(probes.shape_backward(), reference, "shape_backward")


@pytest.mark.task(id="softmax_backward", points=2)
def test_softmax_backward_reference(reference):
    assert_matches_reference(probes.softmax_backward(), reference, "softmax_backward")


@pytest.mark.task(id="log_softmax_backward", points=2)
def test_log_softmax_backward_reference(reference):
    assert_matches_reference(probes.log_softmax_backward(), reference, "log_softmax_backward")


@pytest.mark.task(id="attention", points=3)
def test_attention_reference(reference):
    assert_matches_reference(probes.attention(), reference, "attention")


@pytest.mark.task(id="mha_split_heads", points=2)
def test_mha_split_heads_reference(reference):
    assert_matches_reference(probes.mha_split_heads(), reference, "mha_split_heads")


@pytest.mark.task(id="mha_merge_heads", points=2)
def test_mha_merge_heads_reference(reference):
    assert_matches_reference(probes.mha_merge_heads(), reference, "mha_merge_heads")


@pytest.mark.task(id="adam_step", points=2)
def test_adam_step_reference(reference):
    assert_matches_reference(probes.adam_step(), reference, "adam_step")
