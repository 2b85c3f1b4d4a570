"""One place per fact (issue 34): the CUDA reserve, the site's languages and the pinned
versions are each defined once, and a change there reaches every reader.

- The reserve is ``reserve_mib`` of ``snippets/data/gpus.yaml``: moved in a copy of the data,
  it reaches the finder's answers and page text, the ``{{ gpu_memory usable=yes }}``
  placeholder, and both command lines (``vram job``'s default, ``vram time``'s memory check);
  no help text and no default of ``vram`` states a number of its own.
- The languages are the i18n plugin's ``languages`` in ``mkdocs.yml`` (``verify.languages``):
  no module of the code types a list of them, and the hunspell dictionaries installed for
  the spelling gate follow them.
- The versions are pinned once, in ``constraints.txt``; the requirement files name what to
  install, without a version, and the record's pinned torch is read from there.
"""

from __future__ import annotations

import ast
import html
import json
import re
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import hooks.data.load as data_load
import verify.pins
import vram.catalogue
from hooks.finder import compute, page
from hooks.render.numbers import format_quantity, gpu_memory, pinned_version
from tests.conftest import REPO_ROOT
from verify import languages
from verify.record import pinned_torch
from vram.cli import build_parser, main
from vram.fit import usable_bytes
from vram.job_input import JOB_FIELDS
from vram.units import bytes_to_gib

LLAMA_1B = REPO_ROOT / "snippets" / "data" / "models" / "llama-3.2-1b.json"


# ------------------------------------------------------------------ the CUDA reserve
@pytest.fixture(scope="module")
def moved_reserve(tmp_path_factory) -> tuple[Path, int]:
    """A copy of snippets/data whose gpus.yaml states another reserve (written back by PyYAML:
    the copy has no comments), and that reserve."""
    data = tmp_path_factory.mktemp("reserve") / "data"
    data.mkdir()
    for path in data_load.DATA_DIR.rglob("*"):
        target = data / path.relative_to(data_load.DATA_DIR)
        if path.is_dir():
            target.mkdir(exist_ok=True)
        else:
            target.write_bytes(path.read_bytes())
    gpus = yaml.safe_load((data / "gpus.yaml").read_text(encoding="utf-8"))
    moved = gpus["reserve_mib"] + 519  # no reserve anyone would type: only this file can have put it there
    gpus["reserve_mib"] = moved
    (data / "gpus.yaml").write_text(yaml.safe_dump(gpus, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return data, moved


@pytest.fixture
def reading(moved_reserve, monkeypatch) -> tuple[Path, int]:
    """Every reader of the checkout's data (the render layer, the command line) reads the copy."""
    data, moved = moved_reserve
    monkeypatch.setattr(data_load, "DATA_DIR", data)
    monkeypatch.setattr(vram.catalogue, "DATA_DIR", data)
    return data, moved


def cli_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_reserve_reaches_the_finders_answers_and_page(reading):
    _data, moved = reading
    catalogue = compute.load_catalogue()
    found = compute.finder_data(catalogue)
    assert catalogue.reserve_mib == found["reserve_mib"] == moved
    memory = dict(catalogue.gpus)
    answer = compute.answer(catalogue, catalogue.settings["default"]["model"], "full-adamw", 1, "ddp")
    assert answer["fits"] or answer["short"]
    for fit in answer["fits"] + answer["short"]:
        assert fit["capacity_bytes"] == usable_bytes(memory[fit["gpu"]]["memory_mib"], moved)
    decimals = catalogue.settings["decimals"]
    for lang in languages.LANGUAGES:
        shown = format_quantity(bytes_to_gib(moved * 2**20), "gib", lang, decimals)
        model = catalogue.settings["default"]["model"]
        assert shown in page.note_text(catalogue, lang, model, "full-adamw", "ddp", answer)


def test_the_reserve_reaches_the_placeholder(reading):
    data, moved = reading
    card = next(iter(yaml.safe_load((data / "gpus.yaml").read_text(encoding="utf-8"))["gpus"].items()))
    expected = format_quantity(usable_bytes(card[1]["memory_mib"], moved) / 10**9, "gb", "it", 1)
    assert gpu_memory({"gpu": card[0], "usable": "yes"}, "it") == expected


def test_the_reserve_reaches_both_command_lines(reading, capsys):
    data, moved = reading
    memory = yaml.safe_load((data / "gpus.yaml").read_text(encoding="utf-8"))["gpus"]["h100"]["memory_mib"]
    answer = cli_json(capsys, "job", "--config", str(LLAMA_1B), f"--gpu=h100={memory}")
    assert [f["capacity_bytes"] for f in answer["fits"] + answer["short"]] == [usable_bytes(memory, moved)]
    timed = cli_json(capsys, "time", "--config", str(LLAMA_1B), "--gpu", "h100", "--gpus", "8", "--zero-stage", "3")
    assert timed["reserve_mib"] == moved


def test_no_default_or_help_text_states_a_reserve_of_its_own():
    assert JOB_FIELDS["reserve_mib"] is None  # a job with cards must give it (the catalogue's)
    commands = next(action for action in build_parser()._actions if action.dest == "command").choices
    helps = [action.help for action in commands["job"]._actions if action.dest == "reserve_mib"]
    assert helps and not re.search(r"\d", helps[0]) and "gpus.yaml" in helps[0]


# ------------------------------------------------------------------ the languages
CODE_DIRS = ("hooks", "verify", "vram", "bench")


def literal_language_lists() -> list[str]:
    """Every tuple, list or set literal of two or more of the site's languages in the code."""
    found: list[str] = []
    for folder in CODE_DIRS:
        for path in sorted((REPO_ROOT / folder).rglob("*.py")):
            found.extend(
                f"{path.relative_to(REPO_ROOT)}:{node.lineno}"
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, (ast.Tuple, ast.List, ast.Set))
                and len(node.elts) >= 2
                and all(isinstance(e, ast.Constant) and e.value in languages.LANGUAGES for e in node.elts)
            )
    return found


def test_no_module_types_the_languages():
    assert literal_language_lists() == [], "read them from verify.languages.LANGUAGES"


def test_a_language_added_to_mkdocs_yml_is_the_sites(tmp_path):
    config = yaml.load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=languages._ConfigLoader)  # noqa: S506 (a SafeLoader)
    i18n = next(entry["i18n"] for entry in config["plugins"] if isinstance(entry, dict) and "i18n" in entry)
    i18n["languages"].append({"locale": "es", "name": "Español", "build": True})
    copy = tmp_path / "mkdocs.yml"
    copy.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    assert languages.site_languages(copy) == ((*languages.LANGUAGES, "es"), languages.DEFAULT_LANGUAGE)


@pytest.mark.parametrize("installer", [".ci/run", ".github/workflows/publish.yml"])
def test_the_spelling_dictionaries_installed_are_the_sites_languages(installer):
    text = (REPO_ROOT / installer).read_text(encoding="utf-8")
    assert set(re.findall(r"\bhunspell-([a-z]{2})\b", text)) == set(languages.LANGUAGES)


# ------------------------------------------------------------------ the pinned versions
REQUIREMENT_FILES = ("requirements.txt", "requirements-test.txt", "requirements-build.txt")
# A file pip installs in hash-checking mode must pin each package itself: the same versions
# as constraints.txt (tests/workflows/test_publish_workflow.py and test_locked_installs.py check
# their hashes too). lock/ is written from constraints.txt by `make lock`.
LOCKED_FILES = ("verify/requirements-artifact.txt", "lock/build.txt", "lock/site.txt", "lock/test.txt")


def requirements(name: str) -> list[Requirement]:
    """The requirements of a requirement file (its option lines, ``-c constraints.txt``, and
    each line's options, ``--hash=...``, apart)."""
    lines = [
        line.split("#")[0].split(" --")[0].strip().rstrip("\\").strip()
        for line in (REPO_ROOT / name).read_text(encoding="utf-8").splitlines()
    ]
    return [Requirement(line) for line in lines if line and not line.startswith("-")]


def pins(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.split("#")[0].strip():
            requirement = Requirement(line.split("#")[0].strip())
            found[canonicalize_name(requirement.name)] = next(iter(requirement.specifier)).version
    return found


@pytest.mark.parametrize("name", REQUIREMENT_FILES)
def test_requirement_files_name_packages_and_constraints_pin_them(name):
    constraints = REPO_ROOT / "constraints.txt"
    applied = [
        line.split()[1]
        for line in (REPO_ROOT / name).read_text(encoding="utf-8").splitlines()
        if line.startswith("-c ")
    ]
    assert [((REPO_ROOT / name).parent / path).resolve() for path in applied] == [constraints]  # pip reads it beside
    pinned = pins(constraints.read_text(encoding="utf-8"))
    for requirement in requirements(name):
        assert not requirement.specifier, f"{name}: {requirement}: pin it in constraints.txt only"
        assert canonicalize_name(requirement.name) in pinned, (
            f"{name}: {requirement.name} has no pin in constraints.txt"
        )


@pytest.mark.parametrize("name", LOCKED_FILES)
def test_locked_files_pin_the_constraints_versions(name):
    pinned = pins((REPO_ROOT / "constraints.txt").read_text(encoding="utf-8"))
    for requirement in requirements(name):
        versions = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        assert versions == [pinned.get(canonicalize_name(requirement.name))], (
            f"{name}: {requirement}: constraints.txt pins another"
        )


def test_constraints_pin_each_package_once_exactly():
    lines = [
        line
        for line in (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
        if line.split("#")[0].strip()
    ]
    names = [canonicalize_name(Requirement(line).name) for line in lines]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+==[^=\s]+", line.strip()) for line in lines)


def test_the_records_torch_is_the_constraints_pin(tmp_path):
    text = (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8")
    moved = re.sub(r"(?m)^torch==.*$", "torch==9.9.9", text)
    (tmp_path / "constraints.txt").write_text(moved, encoding="utf-8")
    assert pinned_torch(tmp_path / "constraints.txt") == "9.9.9"
    assert pinned_torch() == pins(text)["torch"]


@pytest.fixture
def moved_pins(tmp_path, monkeypatch) -> dict[str, str]:
    """constraints.txt with torch and DeepSpeed pinned at versions no one would type, read by
    every reader of a version."""
    text = (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8")
    moved = {"torch": "9.8.7", "deepspeed": "7.6.5"}
    for name, version in moved.items():
        text = re.sub(rf"(?mi)^{name}==.*$", f"{name}=={version}", text)
    (tmp_path / "constraints.txt").write_text(text, encoding="utf-8")
    monkeypatch.setattr(verify.pins, "CONSTRAINTS", tmp_path / "constraints.txt")
    return moved


def test_a_moved_pin_reaches_the_record_the_pages_and_the_finder(moved_pins):
    assert pinned_torch() == "9.8.7"
    assert pinned_version({"package": "torch", "parts": "2"}, "fr") == "9.8"
    assert (
        pinned_version({"package": "bitsandbytes"}, "it")
        == pins((REPO_ROOT / "constraints.txt").read_text())["bitsandbytes"]
    )
    for lang in languages.LANGUAGES:
        form = html.unescape(page.finder_form({"assets": "../assets"}, lang))
        assert "DeepSpeed 7.6" in form and "PyTorch 9.8" in form  # the method's hint


NAMED_PACKAGES = {
    "PyTorch": "torch",
    "DeepSpeed": "deepspeed",
    "bitsandbytes": "bitsandbytes",
    "transformers": "transformers",
    "PEFT": "peft",
    "Accelerate": "accelerate",
    "accelerate": "accelerate",
}
PROSE = ("docs/*.md", "snippets/data/*.yaml", "hooks/render/*.yaml")


def test_no_page_or_label_types_a_pinned_version():
    typed = []
    for pattern in PROSE:
        for path in sorted(REPO_ROOT.glob(pattern)):
            typed.extend(
                f"{path.relative_to(REPO_ROOT)}: {match.group(0)}"
                for match in re.finditer(
                    rf"\b({'|'.join(NAMED_PACKAGES)}) (\d+\.\d+(?:\.\d+)?)\b", path.read_text(encoding="utf-8")
                )
                if verify.pins.pinned(NAMED_PACKAGES[match.group(1)]).startswith(match.group(2))
            )
    commands = next(action for action in build_parser()._actions if action.dest == "command").choices
    for name, command in commands.items():
        for action in command._actions:
            typed.extend(
                f"vram {name} {'/'.join(action.option_strings)}: {match.group(0)}"
                for match in re.finditer(rf"\b({'|'.join(NAMED_PACKAGES)}) (\d+\.\d+)", action.help or "")
            )
    assert typed == [], "write {{ pinned package=NAME parts=2 }} (pages) or a label field the code fills"
