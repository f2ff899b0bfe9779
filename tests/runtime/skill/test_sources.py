"""Reading skills: SKILL.md, a folder, a zip, a package, a URL (a local HTTP server), and
what is refused with a message."""

from __future__ import annotations

import http.server
import pickle
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from flink_agents.api.skills import Skills, SkillSourceSpec
from flink_agents.runtime.errors import SkillLoadError
from flink_agents.runtime.skill import SkillManager, parse_skill_md
from flink_agents.runtime.skill.sources import SkillFolders

SKILL_MD = "---\nname: {name}\ndescription: Does {name}.\n---\n\n# {name}\n\nRun it.\n"


def _skill(base: Path, name: str, files: dict[str, str] | None = None) -> Path:
    folder = base / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL_MD.format(name=name), encoding="utf-8")
    for path, text in (files or {}).items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    return folder


def _zip(base: Path, archive: Path) -> Path:
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted(base.rglob("*")):
            if path.is_file():
                zipped.write(path, path.relative_to(base).as_posix())
    return archive


def _names(skills: Skills) -> list[str]:
    manager = SkillManager(skills.sources)
    try:
        return sorted(manager.skills())
    finally:
        manager.close()


def test_skill_md_front_matter_and_instructions(tmp_path: Path) -> None:
    skill = parse_skill_md(
        "---\nname: calc\ndescription: Adds.\nlicense: MIT\n---\n# Calc\nUse bc.\n", tmp_path
    )
    assert (skill.name, skill.description, skill.license) == ("calc", "Adds.", "MIT")
    assert skill.content == "# Calc\nUse bc.\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("# no front matter\n", "no YAML front matter"),
        ("---\ndescription: x\n---\nbody\n", "no 'name'"),
        ("---\nname: x\n---\nbody\n", "no 'description'"),
        ("---\nname: x\ndescription: y\n---\n", "no instructions"),
        ("---\nname: [x\n---\nbody\n", "not YAML"),
    ],
)
def test_a_bad_skill_md_is_refused_with_its_path(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(SkillLoadError, match=problem) as caught:
        parse_skill_md(text, tmp_path)
    assert str(tmp_path / "SKILL.md") in str(caught.value)


def test_a_local_folder_and_a_local_zip(tmp_path: Path) -> None:
    base = tmp_path / "skills"
    _skill(base, "alpha")
    _skill(base, "beta", {"scripts/run.py": "print(1)\n"})
    (base / "not-a-skill").mkdir()
    assert _names(Skills.from_local_dir(str(base))) == ["alpha", "beta"]
    archive = _zip(base, tmp_path / "skills.zip")
    manager = SkillManager(Skills.from_local_dir(str(archive)).sources)
    beta = manager.get("beta")
    assert beta.resource("scripts/run.py") == "print(1)\n"
    unpacked = beta.directory
    assert unpacked != base / "beta" and unpacked.exists()
    manager.close()  # what was unpacked is removed
    assert not unpacked.exists()


def test_a_package_folder_and_a_package_zip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "my_skills_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    _skill(package / "skills", "gamma")
    _zip(package / "skills", package / "more.zip")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    sys.modules.pop("my_skills_pkg", None)
    assert _names(Skills.from_package(("my_skills_pkg", "skills"))) == ["gamma"]
    assert _names(Skills.from_package(("my_skills_pkg", "more.zip"))) == ["gamma"]
    with pytest.raises(SkillLoadError, match="does not exist"):
        _names(Skills.from_package(("my_skills_pkg", "nothing")))
    with pytest.raises(SkillLoadError, match="cannot be imported"):
        _names(Skills.from_package(("no_such_pkg_here", "skills")))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """A local HTTP server of ``tmp_path/www`` (no network here): its base URL."""
    root = tmp_path / "www"
    root.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # pyright: ignore[reportArgumentType]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_url_zip(tmp_path: Path, served: str) -> None:
    base = tmp_path / "skills"
    _skill(base, "delta", {"references/notes.md": "notes"})
    _zip(base, tmp_path / "www" / "skills.zip")
    manager = SkillManager(Skills.from_url(f"{served}/skills.zip").sources)
    assert manager.get("delta").resource("references/notes.md") == "notes"
    manager.close()
    with pytest.raises(SkillLoadError, match="cannot be read"):
        SkillManager(Skills.from_url(f"{served}/missing.zip").sources).skills()
    (tmp_path / "www" / "text.zip").write_text("not a zip", encoding="utf-8")
    with pytest.raises(SkillLoadError, match="is not a zip file"):
        SkillManager(Skills.from_url(f"{served}/text.zip").sources).skills()
    with pytest.raises(SkillLoadError, match="is not http"):
        SkillManager(Skills.from_url("file:///etc/passwd").sources).skills()


def test_a_zip_member_outside_its_folder_refuses_the_archive(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("ok/SKILL.md", SKILL_MD.format(name="ok"))
        zipped.writestr("../escaped.txt", "x")
    with pytest.raises(SkillLoadError, match="outside the archive"):
        SkillFolders().open(SkillSourceSpec(scheme="local", params={"path": str(archive)}))
    assert not (tmp_path.parent / "escaped.txt").exists()


def test_unknown_schemes_and_missing_parameters_are_refused() -> None:
    with pytest.raises(
        SkillLoadError,
        match=r"'classpath' is not known here \(known: \['local', 'package', 'url'\]\)",
    ):
        SkillFolders().open(SkillSourceSpec(scheme="classpath", params={"resource": "x"}))
    with pytest.raises(SkillLoadError, match="needs the parameter 'path'"):
        SkillFolders().open(SkillSourceSpec(scheme="local"))
    with pytest.raises(SkillLoadError, match="does not exist"):
        SkillFolders().open(SkillSourceSpec(scheme="local", params={"path": "/no/such/dir"}))


def test_sources_merge_in_order_and_a_later_skill_replaces_an_earlier(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    _skill(first, "same")
    _skill(first, "only-a")
    _skill(second, "same")
    spec_a = Skills.from_local_dir(str(first)).sources
    spec_b = Skills.from_local_dir(str(second)).sources
    manager = SkillManager([*spec_a, *spec_b, *spec_a])
    assert len(manager.sources) == 2  # the same source is read once
    assert manager.get("same").directory == (second / "same").resolve()
    with pytest.raises(ValueError, match=r"no skill named 'nope' \(skills: \['only-a', 'same'\]\)"):
        manager.get("nope")
    prompt = manager.discovery_prompt(["only-a"])
    assert "<name>only-a</name>" in prompt and "Does only-a." in prompt
    assert "<name>same</name>" not in prompt
    # Pickled (to a Flink worker) without what it read; read again there.
    copy = pickle.loads(pickle.dumps(manager))
    assert copy.sources == manager.sources and sorted(copy.skills()) == ["only-a", "same"]


def test_a_resource_outside_the_skill_folder_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    _skill(tmp_path / "skills", "s")
    skill = SkillManager(Skills.from_local_dir(str(tmp_path / "skills")).sources).get("s")
    assert skill.resource("../../secret.txt") is None
    assert skill.resource("/etc/hostname") is None
