"""Heym's skill rules (§6.1, §4.2): paths, entry point, stdin, stdout, PEP 723, tools, prompt."""

from __future__ import annotations

import base64
import io
import zipfile

import pytest

from libs.tools.agent_tools import skill_tools, skills_prompt, with_skills
from libs.tools.skill_files import (
    SkillError,
    decode_files,
    entry_point,
    inline_dependencies,
    parse_output,
    safe_relative_path,
    stdin_payload,
    tool_name,
)
from libs.tools.skill_upload import SkillUploadError, from_upload

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("bad", ["../x.py", "a/../../x.py", "/etc/passwd", "", "a\x00b"])
def test_unsafe_paths_are_refused(bad: str) -> None:
    with pytest.raises(SkillError):
        safe_relative_path(bad)


def test_paths_are_normalised() -> None:
    assert safe_relative_path("./lib\\util.py") == "lib/util.py"


def test_entry_point_prefers_main_then_run_then_the_first_python_file() -> None:
    assert entry_point(["a.py", "run.py", "pkg/main.py"]) == "pkg/main.py"
    assert entry_point(["a.py", "run.py"]) == "run.py"
    assert entry_point(["README.md", "b.py", "a.py"]) == "b.py"
    # Heym's "ends with main.py" quirk is fixed: domain.py is not main.py
    assert entry_point(["domain.py", "main.py"]) == "main.py"
    with pytest.raises(SkillError, match="No Python file found in skill"):
        entry_point(["README.md"])


def test_stdin_is_the_raw_input_string_or_the_arguments_as_json() -> None:
    assert stdin_payload({"input": "hello"}) == b"hello"
    assert stdin_payload({"input": {"a": 1}}) == b'{"a": 1}'
    assert stdin_payload({"input": "x", "n": 2}) == b'{"input": "x", "n": 2}'


def test_stdout_is_json_or_wrapped_with_stderr() -> None:
    assert parse_output(b'  {"a": 1}\n', b"") == {"a": 1}
    assert parse_output(b"plain\n", b"warn") == {"output": "plain", "stderr": "warn"}
    assert parse_output(b"", b"") == {"output": "", "stderr": ""}


def test_base64_files_are_decoded() -> None:
    data = base64.b64encode(b"\x00\x01").decode()
    skill = {"files": [{"path": "d.bin", "content": data, "encoding": "base64"}]}
    assert decode_files(skill) == [("d.bin", b"\x00\x01")]


def test_pep_723_dependencies_are_read() -> None:
    src = "# /// script\n# dependencies = [\n#   'tabulate>=0.9',\n# ]\n# ///\nimport tabulate\n"
    assert inline_dependencies(src) == ["tabulate>=0.9"]
    assert inline_dependencies("print(1)") == []


def test_skill_tools_prompt_and_names_follow_heym() -> None:
    skills = [
        {"name": "Web Search", "content": "Search well.", "files": [{"path": "main.py"}]},
        {"name": "Tone", "content": "Be kind."},
        {"name": "Empty", "content": ""},
    ]
    tools = skill_tools(skills)
    assert [t["name"] for t in tools] == ["skill_web_search"]
    assert tools[0]["parameters"]["required"] == ["input"]
    assert tools[0]["_source"] == "skill"
    assert tool_name("My Skill") == "skill_my_skill"
    assert skills_prompt(skills) == "Search well.\n\n---\n\nBe kind."
    assert with_skills("You are helpful.", skills).endswith("Be kind.\n\n---\n\nYou are helpful.")


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_a_zip_bomb_is_stopped_at_the_size_cap() -> None:
    bomb = _zip({"main.py": b"0" * (9 * 1024 * 1024)})
    assert len(bomb) < 100_000
    with pytest.raises(SkillUploadError, match="unpack to more than"):
        from_upload("bomb.zip", bomb)


def test_a_zip_folder_is_unwrapped_and_binary_files_kept_as_base64() -> None:
    draft = from_upload(
        "s.zip", _zip({"s/SKILL.md": b"Hi", "s/main.py": b"print(1)", "s/x.bin": b"\xff\xfe"})
    )
    assert draft.content == "Hi"
    paths = {f["path"]: f["encoding"] for f in draft.files}
    assert paths == {"main.py": "text", "x.bin": "base64"}
