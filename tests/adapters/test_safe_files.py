"""Opening through fds what another local user could shape: real files, as root, `nobody` planting."""

from __future__ import annotations

import os
import stat

import pytest

from healerd.adapters.safe_files import check_parents, open_for_append, read_capped
from healerd.private import UnsafePath
from tests.support.other_user import NOBODY, as_other_user, needs_root, shared_dir

pytestmark = needs_root


def test_append_creates_and_reopens_its_own_file(tmp_path):
    path = tmp_path / "a" / "b" / "f.jsonl"
    fd = open_for_append(str(path))
    os.write(fd, b"one\n")
    os.close(fd)
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o700 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    os.chmod(path, 0o644)
    fd = open_for_append(str(path))   # made earlier by the daemon: appended to, made private again
    os.write(fd, b"two\n")
    os.close(fd)
    assert path.read_text() == "one\ntwo\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_what_another_user_planted_is_refused_naming_the_owner(tmp_path):
    shared = shared_dir(tmp_path / "shared")
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    as_other_user(f"cd {shared} && ln -s {target} dir && ln -s {target}/x link && touch theirs && mkfifo fifo "
                  f"&& mkdir theirdir")
    cases = {"dir/f": "symbolic link owned by nobody", "link": "symbolic link owned by nobody",
             "theirs": "belongs to nobody", "fifo": "FIFO (named pipe) owned by nobody",
             "theirdir/f": "directory owned by nobody", "theirdir/new/f": "directory owned by nobody"}
    for rel, said in cases.items():
        with pytest.raises(UnsafePath) as caught:
            open_for_append(f"{shared}/{rel}")
        assert said in str(caught.value) and f"{shared}/" in str(caught.value), str(caught.value)
    assert os.listdir(target) == [] and not os.path.exists(f"{shared}/theirdir/new")


def test_a_world_writable_directory_without_the_sticky_bit_is_refused(tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o777)
    with pytest.raises(UnsafePath, match="writable by group and others"):
        check_parents(str(loose / "f"), "feed file")
    os.chmod(loose, 0o1777)
    check_parents(str(loose / "f"), "feed file")


def test_read_capped_reads_regular_files_only_and_never_past_the_limit(tmp_path):
    shared = shared_dir(tmp_path / "shared")
    secret = tmp_path / "secret"
    secret.write_text('token = "s3cr3t"\n')
    os.chmod(secret, 0o600)
    as_other_user(f"cd {shared} && mkfifo fifo.toml && ln -s {secret} stolen.toml && echo 'url = 1' > theirs.toml")
    (tmp_path / "big.toml").write_bytes(b"")
    os.truncate(tmp_path / "big.toml", 1 << 30)
    os.symlink(secret, tmp_path / "mine.toml")
    assert read_capped(str(tmp_path / "mine.toml"), 1000) == (secret.read_bytes(), True)
    assert read_capped(f"{shared}/theirs.toml", 1000) == (b"url = 1\n", False)
    for path, said in ((f"{shared}/fifo.toml", "FIFO"), (f"{shared}/stolen.toml", "symbolic link owned by nobody"),
                       (str(tmp_path / "big.toml"), "1,073,741,824 bytes, over the limit of 1,000")):
        with pytest.raises(UnsafePath, match=said) as caught:
            read_capped(path, 1000)
        assert "s3cr3t" not in str(caught.value) and "token" not in str(caught.value)
    assert os.lstat(f"{shared}/theirs.toml").st_uid == NOBODY
