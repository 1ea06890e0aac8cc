"""The build step pyproject.toml cannot declare: the built-in pipelines, the parameter defaults and the example
graphs live at the repository's top level (DVC and the docs name them there) and are copied into the package as
``hublab/_defaults/`` when a wheel is built, so an installed HubLab works in any folder (``hublab.config``)."""

import os
import shutil
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: what a project without its own files reads (relative to the repository root)
SHIPPED = ("params.yaml", "pipelines", "examples/your-graph", "examples/graphs", "examples/my_questions.csv")


class BuildWithDefaults(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "hublab" / "_defaults"
        for rel in SHIPPED:
            src, dst = HERE / rel, target / rel
            if not src.exists():
                raise SystemExit(f"setup.py: {rel} is missing from the source tree (an sdist lists it in MANIFEST.in)")
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(src, dst)


# the build tree outside the checkout (one per user, reused): `pip install .` leaves no build/ folder in the repository
BUILD_BASE = Path(tempfile.gettempdir()) / f"hublab-build-{os.getuid()}"
setup(cmdclass={"build_py": BuildWithDefaults}, options={"build": {"build_base": str(BUILD_BASE)}})
