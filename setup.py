"""The metadata is in setup.cfg; this adds two files from outside the package to the built package.

``LICENSE`` (which ``homework assign`` writes into every student copy and autograder) and
``docs/teaching.md`` (which ``python -m tinyattn.homework guide`` prints) are copied into
the wheel's ``tinyattn/`` and ``tinyattn/homework/``. A checkout reads them where they are.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = {  # the checkout's file -> its place in the built package
    "LICENSE": ("tinyattn", "LICENSE"),
    os.path.join("docs", "teaching.md"): ("tinyattn", "homework", "teaching.md"),
}


class build_py_with_files(build_py):  # noqa: N801 (setuptools' command naming)
    """``build_py``, then the files of ``SHIPPED`` into the built package."""

    def run(self) -> None:
        """Build the package as usual, then add the files (not for an editable install)."""
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads them in the checkout (tinyattn/homework/shipped.py)
        for source, target in SHIPPED.items():
            destination = os.path.join(self.build_lib, *target)
            self.mkpath(os.path.dirname(destination))
            self.copy_file(source, destination)


setup(cmdclass={"build_py": build_py_with_files})
