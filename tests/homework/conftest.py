"""The grading tests' fake Gradescope machine is removed at the end of the session."""

import pytest

from .gradescope_box import remove_student_venv


@pytest.fixture(scope="session", autouse=True)
def _student_venv_is_removed_at_the_end():
    yield
    remove_student_venv()
