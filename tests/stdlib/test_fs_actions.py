"""``mail.stdlib.fs.actions`` in a temporary root: every result text, the caps, and escape
attempts (``..``, absolute paths outside, a symlink to a file outside, a symlinked directory
leading outside), none of which touches anything outside the root."""

# The tests look at the temporary root directly: small blocking file checks are the point.
# ruff: noqa: ASYNC240

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mail.api import MAILAction
from mail.stdlib import fs as fs_package
from mail.stdlib.fs import actions
from mail.stdlib.fs.actions import (
    create_directory,
    delete_file,
    read_directory,
    read_file,
    write_file,
)

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def root(use_settings: Any, tmp_path: Path) -> Path:
    use_settings(fs={"root": str(tmp_path / "root"), "max_read_bytes": 100, "max_write_bytes": 50})
    return tmp_path / "root"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the secret", encoding="utf-8")
    return secret


def test_the_actions_are_mail_actions() -> None:
    for name in fs_package.__all__:
        action = getattr(actions, name)
        assert isinstance(action, MAILAction)
        assert action.name == name
    assert actions.FILE_WRITE_PARAMETERS["required"] == ["path", "content"]


async def test_the_root_is_created_on_first_use(root: Path) -> None:
    assert not root.exists()
    assert await read_directory({"path": "."}) == ""
    assert root.is_dir()


async def test_write_read_list_delete(root: Path) -> None:
    assert await write_file({"path": "notes/a/today.txt", "content": "héllo"}) == (
        "successfully wrote to notes/a/today.txt"
    )
    assert (root / "notes" / "a" / "today.txt").read_text(encoding="utf-8") == "héllo"
    assert await read_file({"path": "notes/a/today.txt"}) == "héllo"
    await write_file({"path": "notes/b.txt", "content": ""})
    assert await read_directory({"path": "notes"}) == "a\nb.txt"
    assert await delete_file({"path": "notes/b.txt"}) == "successfully deleted notes/b.txt"
    assert not (root / "notes" / "b.txt").exists()
    assert await write_file({"path": "notes/a/today.txt", "content": "again"}) == (
        "successfully wrote to notes/a/today.txt"
    )
    assert await read_file({"path": "notes/a/today.txt"}) == "again"


async def test_directories(root: Path) -> None:
    assert await create_directory({"path": "x/y"}) == "successfully created directory x/y"
    assert (root / "x" / "y").is_dir()
    assert await create_directory({"path": "x/y"}) == "Error: x/y already exists"
    assert await read_directory({"path": "x"}) == "y"
    assert await read_directory({"path": "nope"}) == "Error: directory not found at nope"
    await write_file({"path": "f.txt", "content": "1"})
    assert await read_directory({"path": "f.txt"}) == "Error: f.txt is not a directory"
    assert await read_directory({"path": "."}) == "f.txt\nx"


async def test_error_texts(root: Path) -> None:
    assert await read_file({"path": "missing.txt"}) == "Error: file not found at missing.txt"
    assert await delete_file({"path": "missing.txt"}) == "Error: file not found at missing.txt"
    await create_directory({"path": "d"})
    assert await read_file({"path": "d"}) == "Error: d is not a file"
    assert await delete_file({"path": "d"}) == "Error: d is not a file"
    assert await write_file({"path": "d", "content": "x"}) == "Error: d is a directory"
    assert await read_file({}) == "Error: 'path' must be a non-empty string"
    assert await write_file({"path": "a.txt"}) == "Error: 'content' must be a string"
    assert root.is_dir()


async def test_size_caps(root: Path) -> None:
    assert (
        await write_file({"path": "ok.txt", "content": "x" * 50}) == "successfully wrote to ok.txt"
    )
    assert await write_file({"path": "big.txt", "content": "x" * 51}) == (
        "Error: the content is larger than 50 bytes (max_write_bytes in [stdlib.fs])"
    )
    assert not (root / "big.txt").exists()
    (root / "huge.txt").write_text("y" * 101, encoding="utf-8")
    assert await read_file({"path": "huge.txt"}) == (
        "Error: huge.txt is larger than 100 bytes (max_read_bytes in [stdlib.fs])"
    )
    (root / "edge.txt").write_text("y" * 100, encoding="utf-8")
    assert await read_file({"path": "edge.txt"}) == "y" * 100


async def test_absolute_paths_inside_the_root_are_accepted(root: Path) -> None:
    await write_file({"path": "in.txt", "content": "inside"})
    assert await read_file({"path": str(root / "in.txt")}) == "inside"


REFUSAL = "is outside the files directory; paths are relative to [stdlib.fs] root"


@pytest.mark.parametrize(
    "action", [read_file, write_file, delete_file, create_directory, read_directory]
)
async def test_dot_dot_and_absolute_paths_outside_are_refused(
    root: Path, outside: Path, action: MAILAction
) -> None:
    for path in ("../outside/secret.txt", "a/../../outside/secret.txt", str(outside)):
        result = await action({"path": path, "content": "overwritten"})
        assert result == f"Error: {path} {REFUSAL}"
        assert str(root) not in result
    assert outside.read_text(encoding="utf-8") == "the secret"


async def test_a_symlink_to_a_file_outside_is_refused(root: Path, outside: Path) -> None:
    root.mkdir()
    (root / "link.txt").symlink_to(outside)
    for action in (read_file, write_file, delete_file):
        result = await action({"path": "link.txt", "content": "overwritten"})
        assert result == f"Error: link.txt {REFUSAL}"
    assert outside.read_text(encoding="utf-8") == "the secret"
    assert (root / "link.txt").is_symlink()


async def test_a_symlinked_directory_leading_out_is_refused(root: Path, outside: Path) -> None:
    root.mkdir()
    (root / "sub").mkdir()
    (root / "sub" / "door").symlink_to(outside.parent, target_is_directory=True)
    for action, path in [
        (read_file, "sub/door/secret.txt"),
        (write_file, "sub/door/new.txt"),
        (read_directory, "sub/door"),
        (create_directory, "sub/door/made"),
    ]:
        result = await action({"path": path, "content": "x"})
        assert result == f"Error: {path} {REFUSAL}"
    assert sorted(p.name for p in outside.parent.iterdir()) == ["secret.txt"]


async def test_a_symlink_that_stays_inside_is_followed(root: Path) -> None:
    await write_file({"path": "real/data.txt", "content": "data"})
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    assert await read_file({"path": "alias/data.txt"}) == "data"
