"""Packaging: the wheel built from this checkout installs into a fresh venv and works there.

One wheel and one venv for the module (they take a few seconds each). The wheel is
built from a copy of the checkout, so the build cannot leave build/ or egg-info
behind in the work tree and cannot pick up a stale healerd/schema.sql: setup.py must
copy the root schema.sql into the package. The venv has no access to the checkout or
to the system site-packages: what runs there is only what the wheel carries, with its
dependencies installed by pip.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import click
import pytest

from tests.support.paths import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]

# Never copied into the build tree: VCS data, build output, caches, local state.
EXCLUDE = {".git", "build", "dist", ".venv", ".ci-venv", ".pytest_cache", "__pycache__", "healerd-state"}


def _ignore(directory: str, names: list[str]) -> set[str]:
    skip = {n for n in names if n in EXCLUDE or n.endswith((".egg-info", ".pyc"))}
    if Path(directory).resolve() == (ROOT / "healerd").resolve():
        skip.add("schema.sql")  # a build-time copy; the build must make its own from the root one
    return skip


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "HEALERD_SOCKET",
                        "HEALERD_STATE_DIR", "STATE_DIRECTORY", "RUNTIME_DIRECTORY", "LOGS_DIRECTORY",
                        "CODE_HEALER_URL", "CODE_HEALER_TOKEN", "NOTIFY_SOCKET")}
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def source_files() -> set[str]:
    """Every file of the healerd package in the checkout, as wheel paths (healerd/...)."""
    out = set()
    for p in (ROOT / "healerd").rglob("*"):
        rel = p.relative_to(ROOT)
        if p.is_file() and "__pycache__" not in rel.parts and p.suffix != ".pyc" and rel != Path("healerd/schema.sql"):
            out.add(rel.as_posix())
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("pkg")
    src = work / "src"
    shutil.copytree(ROOT, src, ignore=_ignore, symlinks=True)
    out = work / "dist"
    r = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out)], cwd=src, env=clean_env(),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"python -m build --wheel failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    wheels = list(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    assert wheels[0].name == f"healerd-{VERSION}-py3-none-any.whl"
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("venv")
    env_dir = home / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", str(env_dir)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], cwd=home,
                       env=clean_env(), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"pip install of the wheel failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return env_dir


def vrun(venv: Path, name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run a console script of the venv from a directory outside the checkout."""
    return subprocess.run([str(venv / "bin" / name), *args], cwd=venv.parent, env=clean_env(), capture_output=True,
                          text=True, timeout=timeout)


# -- the wheel ------------------------------------------------------------------------------


def test_wheel_carries_every_module_data_file_and_the_schema(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        packaged_schema = z.read("healerd/schema.sql")
        dist_info = f"healerd-{VERSION}.dist-info"
        entry_points = z.read(f"{dist_info}/entry_points.txt").decode()
        metadata = z.read(f"{dist_info}/METADATA").decode()

    expected = source_files()
    assert any(n.endswith(".py") for n in expected) and "healerd/cli/healerctl.py" in expected
    missing = sorted(expected - names)
    assert not missing, f"files of the healerd package missing from the wheel: {missing}"
    # Every package directory is a package in the wheel (nothing left out by packages.find).
    for d in (ROOT / "healerd").rglob("*"):
        if d.is_dir() and d.name != "__pycache__":
            init = d.relative_to(ROOT).as_posix() + "/__init__.py"
            assert init in names, f"{init} missing: {d} would not be importable once installed"

    # The schema the daemon applies is exactly the repository's schema.sql.
    assert hashlib.sha256(packaged_schema).digest() == hashlib.sha256((ROOT / "schema.sql").read_bytes()).digest()

    # Nothing but the package and its metadata; no tests, no repo-root files.
    stray = sorted(n for n in names if not (n.startswith("healerd/") or n.startswith(dist_info + "/")))
    assert not stray, stray

    # Both console scripts, pointing at functions that exist.
    scripts = dict(re.findall(r"^(\S+)\s*=\s*(\S+)$", entry_points.split("[console_scripts]", 1)[1], re.M))
    assert scripts == PYPROJECT["project"]["scripts"], entry_points
    # The declared dependencies are in the metadata pip reads.
    requires = [re.split(r"[<>=!~\[ ;(]", line.split(":", 1)[1].strip(), maxsplit=1)[0]
                for line in metadata.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    declared = [re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0] for d in PYPROJECT["project"]["dependencies"]]
    assert sorted(set(requires)) == sorted(declared), metadata[:2000]


# -- installed in a fresh venv ----------------------------------------------------------------------


def test_installed_package_comes_from_the_venv_not_the_checkout(venv):
    r = subprocess.run([str(venv / "bin" / "python"), "-c",
                        "import healerd, importlib.resources as r; "
                        "print(healerd.__file__); print(healerd.__version__); "
                        "print(len(r.files('healerd').joinpath('schema.sql').read_text()))"],
                       cwd=venv.parent, env=clean_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    path, version, schema_len = r.stdout.split("\n")[:3]
    assert Path(path).resolve().is_relative_to(venv.resolve()), path
    assert not Path(path).resolve().is_relative_to(ROOT), path
    assert version == VERSION
    assert int(schema_len) == len((ROOT / "schema.sql").read_text())


@pytest.mark.parametrize("script", ["healerd", "healerctl"])
def test_installed_version(venv, script):
    r = vrun(venv, script, "--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{script}, version {VERSION}"


def test_installed_demo_runs_to_the_end(venv):
    state = venv.parent / "demo"
    r = vrun(venv, "healerd", "demo", "--state-dir", str(state), timeout=300)
    assert r.returncode == 0, f"demo exited {r.returncode}\n{r.stdout}\n{r.stderr}"
    assert re.search(r"ALERT HEALED products: builtin fix promoted as version 2", r.stdout), r.stdout
    assert "products now runs parser version 2" in r.stdout, r.stdout
    assert re.search(r"ALERT QUARANTINED stats: ", r.stdout), r.stdout
    assert "stats is QUARANTINED until" in r.stdout and "the deferred report says:" in r.stdout, r.stdout
    # The daemon it started was the venv's, on a database made from the packaged schema.
    assert (state / "state" / "healerd.db").stat().st_size > 0


# -- --help everywhere ------------------------------------------------------------------------------


def _walk(group: click.Group, path: tuple[str, ...] = ()):
    for name in sorted(group.commands):
        cmd = group.commands[name]
        if cmd.hidden:
            continue
        yield path + (name,), cmd
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, path + (name,))


def _commands() -> list[tuple[str, tuple[str, ...]]]:
    from healerd.cli.healerctl import cli
    from healerd.cli.healerd_cmd import main

    out = [("healerctl", ()), ("healerd", ())]
    out += [("healerctl", p) for p, _ in _walk(cli)]
    out += [("healerd", p) for p, _ in _walk(main)]
    return out


def _description(help_text: str) -> str:
    """The paragraph(s) between click's Usage line(s) and the Options/Commands sections."""
    lines = help_text.splitlines()
    assert lines and lines[0].startswith("Usage: "), help_text
    body = []
    for line in lines[1:]:
        if re.match(r"^(Options|Commands|Arguments):\s*$", line):
            break
        body.append(line)
    return " ".join(" ".join(body).split())


@pytest.mark.parametrize("script,path", _commands(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
def test_help_of_every_command(venv, script, path):
    r = vrun(venv, script, *path, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"Usage: {' '.join((script, *path))} "), r.stdout[:200]
    desc = _description(r.stdout)
    assert len(desc) >= 15, f"`{script} {' '.join(path)} --help` has no description:\n{r.stdout}"
    # And it is the command's own docstring, not a parent's or a placeholder.
    from healerd.cli.healerctl import cli
    from healerd.cli.healerd_cmd import main

    cmd = cli if script == "healerctl" else main
    for part in path:
        cmd = cmd.commands[part]
    first = " ".join((cmd.help or "").strip().split("\n\n")[0].split())
    assert first and desc.startswith(first), f"{desc!r} does not start with {first!r}"
