"""Includes stay inside snippets/ (../shared/cases/integrity.md, "Paths"): an include that is a
symbolic link, or whose real path is outside the snippets folder, is refused before it is read."""

from __future__ import annotations

import os

import pytest

from hooks.checks.snippet_includes import check_snippets
from hooks.errors import RenderError


@pytest.fixture
def snippets(tmp_path):
    base = tmp_path / "snippets"
    (base / "checks").mkdir(parents=True)
    (base / "checks" / "topology.sh").write_text("nvidia-smi topo -m\n", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("SECRET=1\n", encoding="utf-8")
    return base


def page(path: str) -> str:
    return f'```bash\n--8<-- "{path}"\n```\n'


def check(base, path):
    check_snippets(page(path), {"base_path": [str(base)]})


def test_a_plain_file_inside_passes(snippets):
    check(snippets, "checks/topology.sh")


def test_the_case_a_link_to_the_process_environment(snippets):
    os.symlink("/proc/self/environ", snippets / "host.txt")
    with pytest.raises(
        RenderError, match=r"snippet include 'host\.txt': host\.txt is a symbolic link \(to /proc/self/environ\)"
    ):
        check(snippets, "host.txt")


@pytest.mark.parametrize(
    "make_link, include",
    [
        (
            lambda base: os.symlink(base / "checks" / "topology.sh", base / "same.sh"),
            "same.sh",
        ),  # a link even to a snippet
        (lambda base: os.symlink(base.parent, base / "up"), "up/outside.txt"),  # a linked folder
        (lambda base: os.symlink("../../outside.txt", base / "checks" / "rel.txt"), "checks/rel.txt"),
    ],
)
def test_any_link_on_the_way_is_refused(snippets, make_link, include):
    make_link(snippets)
    with pytest.raises(RenderError, match=rf"snippet include '{include}': .* is a symbolic link"):
        check(snippets, include)


def test_a_nested_include_of_a_link_is_refused(snippets):
    os.symlink("/proc/self/environ", snippets / "host.txt")
    (snippets / "wrapper.sh").write_text('--8<-- "host.txt"\n', encoding="utf-8")
    with pytest.raises(RenderError, match=r"'host\.txt': host\.txt is a symbolic link"):
        check(snippets, "wrapper.sh")


def test_a_path_that_climbs_out_is_refused(snippets):
    with pytest.raises(
        RenderError, match=r"broken snippet include: Snippet at path '\.\./outside\.txt' could not be found"
    ):
        check(snippets, "../outside.txt")


def checked(paths, root):
    """What the build does with the files it reads: keep the repository's own, refuse a link among them."""
    from hooks.checks.snippet_includes import check_plain_files, own_content

    check_plain_files(own_content(paths, root, [root / "docs", root / "snippets", root / "overrides"]), root)


def test_files_the_site_copies_are_plain_files_of_the_checkout(tmp_path):
    """``docs/assets/env.txt -> /proc/self/environ`` was copied into the built site (MkDocs
    follows the link) with no page naming it: the build's environment, published."""
    assets = tmp_path / "docs" / "assets"
    assets.mkdir(parents=True)
    (assets / "guide.css").write_text("p {}\n", encoding="utf-8")
    checked(
        [assets / "guide.css", "/usr/lib/python3/dist-packages/theme.css"], tmp_path
    )  # outside: the theme's package
    os.symlink("/proc/self/environ", assets / "env.txt")
    with pytest.raises(
        RenderError, match=r"docs/assets/env\.txt: docs/assets/env\.txt is a symbolic link \(to /proc/self/environ\)"
    ):
        checked([assets / "guide.css", assets / "env.txt"], tmp_path)
    os.symlink("/etc", tmp_path / "docs" / "linked")
    with pytest.raises(RenderError, match=r"docs/linked/hostname: docs/linked is a symbolic link \(to /etc\)"):
        checked([tmp_path / "docs" / "linked" / "hostname"], tmp_path)


def test_a_linked_content_folder_is_refused_and_a_linked_environment_is_not(tmp_path):
    """A ``.venv`` inside the checkout that links to another folder holds the theme's files:
    installed packages, not the repository's content (every build failed on its favicon). A
    content folder that is itself a link (``overrides -> /etc``) is refused."""
    environment = tmp_path / "elsewhere" / "venv" / "lib" / "material" / "templates"
    environment.mkdir(parents=True)
    (environment / "base.html").write_text("<html></html>\n", encoding="utf-8")
    root = tmp_path / "checkout"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Guide\n", encoding="utf-8")
    os.symlink(tmp_path / "elsewhere" / "venv", root / ".venv")
    checked([root / "docs" / "index.md", root / ".venv" / "lib" / "material" / "templates" / "base.html"], root)
    os.symlink(environment, root / "overrides")
    with pytest.raises(RenderError, match=r"^overrides/base\.html: overrides is a symbolic link"):
        checked([root / "docs" / "index.md", root / "overrides" / "base.html"], root)


def test_a_content_folder_outside_the_checkout_is_refused(tmp_path):
    from hooks.checks.snippet_includes import own_content

    with pytest.raises(RenderError, match=r"/etc: a content folder outside the repository"):
        own_content([], tmp_path, [tmp_path / "docs", "/etc"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "# --8<-- [start:one]\nx\n# --8<-- [end:onee]\ny\n",
            (
                r"f\.py:3: section marker \[end:onee\] closes no section; "
                r"section 'one' \(line 1\) is still open"
            ),
        ),
        ("# --8<-- [start:one]\nx\n", r"f\.py:1: section 'one' has no \[end:one\]"),
        ("x\n# --8<-- [end:one]\n", r"f\.py:2: section marker \[end:one\] closes no section$"),
        (
            "# --8<-- [start:a]\n# --8<-- [start:a]\n# --8<-- [end:a]\n",
            r"f\.py:2: section marker \[start:a\] while section 'a'",
        ),
    ],
)
def test_section_markers_that_do_not_pair_up(text, message):
    """Issue 33: a misspelt end marker made pymdownx.snippets show the rest of the file."""
    from hooks.checks.snippet_includes import check_section_markers

    with pytest.raises(RenderError, match=message):
        check_section_markers(text, "snippets/f.py")


@pytest.mark.parametrize(
    "text",
    [
        "# --8<-- [start:a]\n# --8<-- [start:b]\nx\n# --8<-- [end:b]\n# --8<-- [end:a]\n",  # nested, as pymdownx allows
        "# --8<-- [start:a]\n# --8<-- [start:b]\n# --8<-- [end:a]\n# --8<-- [end:b]\n",  # overlapping
        "# ;--8<-- [end:onee]\nprint('an escaped marker is text')\n",
        "no markers\n",
    ],
)
def test_section_markers_that_pair_up(text):
    from hooks.checks.snippet_includes import check_section_markers

    check_section_markers(text, "snippets/f.py")
