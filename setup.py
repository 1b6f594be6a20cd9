"""Ships the repo-root schema.sql inside the installed package.

schema.sql lives at the repository root (it is the whole SQLite schema and the
document people read); the daemon loads it from the package, so the build copies
it into healerd/ of the wheel. A non-editable install therefore always carries it.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py as _build_py

ROOT = Path(__file__).resolve().parent


class build_py(_build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "healerd" / "schema.sql"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / "schema.sql", target)


setup(cmdclass={"build_py": build_py})
