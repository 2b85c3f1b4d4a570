"""The tools' own readers decide what "the same code" is: bash's parser, not Pygments'
highlighting; and reading a block never runs it."""

from __future__ import annotations

import pytest

from verify.extract import ExtractError, compare_code
from verify.readers import ReadError, language_of, read_as


def test_bash_reads_comments_where_bash_does():
    # bash's own reading: the comment is gone, "#y" inside a word and "# b" inside quotes stay
    assert read_as("bash", 'x=#y; echo $x  # commento\necho "a # b"\n') == 'x=#y; echo $x\necho "a # b"\n\n'
    assert read_as("bash", "nvidia-smi  # modello\n") == read_as("bash", "nvidia-smi  # modèle\n")
    assert read_as("bash", "x=#y; echo $x\n") != read_as("bash", "x=#z; rm -rf ~\n")


def test_reading_a_shell_block_runs_nothing(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    startup = tmp_path / "env.sh"
    startup.write_text(f"touch {marker}-bash-env\n")
    monkeypatch.setenv("BASH_ENV", str(startup))  # a non-interactive bash sources it unless the environment is cleared
    read_as("bash", f"touch {marker}\necho $(touch {marker}-subst)\n")
    assert list(tmp_path.iterdir()) == [startup]


def test_code_a_tool_cannot_read_is_refused():
    with pytest.raises(ReadError, match="bash cannot parse it"):
        read_as("bash", 'echo "not closed\n')
    with pytest.raises(ReadError, match="here-document"):
        read_as("bash", "cat <<EOF\nno end\n")  # bash warns and reads to the end: everything after would be data
    with pytest.raises(ReadError, match="not valid YAML"):
        read_as("yaml", "a: [1\n")
    with pytest.raises(ReadError, match="no reader for 'rust'"):
        read_as("rust", "fn main() {}\n")


def test_yaml_and_json_are_compared_as_data():
    # inside a block scalar '#' is text: a YAML reader keeps it, a line filter would cut it
    with pytest.raises(ExtractError, match="yaml reads the fr version differently"):
        compare_code(
            "launch.yaml",
            ("run: |\n  python train.py # --resume\n", "the it version"),
            ("run: |\n  python train.py # --evil\n", "the fr version"),
        )
    compare_code("ds.json", ('{"a": 1, "b": [2]}\n', "it"), ('{"a":1,\n "b":[2]}\n', "fr"))


def test_languages_by_fence_name_and_file_name():
    assert [
        language_of(name) for name in ("bash", "sh", "py", "yaml", "nccl_check.py", "ds_zero2.json", "to_hf.sh", "text")
    ] == ["bash", "bash", "python", "yaml", "python", "json", "bash", None]
