"""Bad inputs make ``mkdocs build --strict`` fail with one line naming the file and the
problem, never a traceback (../shared/cases/bad-inputs.md; site.md cases 1 and 5)."""

from __future__ import annotations

import re

import pytest
import yaml

from verify.languages import LANGUAGES

pytestmark = pytest.mark.slow

TOPOLOGY = '--8<-- "checks/topology.sh"'


def edit(root, rel, old, new):
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{rel} no longer contains {old!r}: update this test"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def edit_pages(root, page, old, new):
    """The same edit in every language of ``docs/<page>.<lang>.md`` (both include the same snippets)."""
    for lang in LANGUAGES:
        edit(root, f"docs/{page}.{lang}.md", old, new)


def append_to_pages(root, page, text):
    for lang in LANGUAGES:
        with open(root / f"docs/{page}.{lang}.md", "a", encoding="utf-8") as file:
            file.write(text)


def nested_missing(root):
    (root / "snippets/checks/nested.sh").write_text('--8<-- "checks/nope.sh"\n', encoding="utf-8")
    edit_pages(root, "index", TOPOLOGY, '--8<-- "checks/nested.sh"')


def comment_attack(root):
    """integrity.md: French comments carrying a coding cookie and an escaped newline."""
    path = root / "snippets/comments.yaml"
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    first = next(entry for entry in entries if entry["it"].startswith("nccl_check.py"))
    warm_up = next(entry for entry in entries if entry["it"] == "riscaldamento")
    first["fr"] += " (encoding: raw_unicode_escape)"
    warm_up["fr"] += '\\u000a    print("X", flush=True)'
    path.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")


def notebook_line(root, lang, cell, text):
    """``text`` as the first line of code cell ``cell`` (from 1) of ``docs/memory-notebook.<lang>.ipynb``."""
    import json

    path = root / f"docs/memory-notebook.{lang}.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"][cell - 1]
    code["source"] = [text + "\n", *code["source"]]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def second_check_block(root):
    append_to_pages(root, "index", '\n```python title="nccl_check.py"\n--8<-- "nccl_check.py"\n```\n')


def include_environment(root):
    """integrity.md, Paths: a snippet linked to the build's environment, included by a page."""
    (root / "snippets" / "host.txt").symlink_to("/proc/self/environ")
    append_to_pages(root, "index", '\n```text\n--8<-- "host.txt"\n```\n')


def mermaid_diagram(root):
    """The usual Material set-up for Mermaid (a custom fence), and a diagram on a page."""
    edit(
        root,
        "mkdocs.yml",
        "  - pymdownx.superfences\n",
        "  - pymdownx.superfences:\n      custom_fences:\n        - name: mermaid\n          class: mermaid\n"
        "          format: !!python/name:pymdownx.superfences.fence_code_format\n",
    )
    append_to_pages(root, "memory-formulas", "\n```{ .mermaid .inline-example }\ngraph TD; A-->B\n```\n")


def misspelt_section_end(root):
    """Issue 33: pymdownx.snippets showed the rest of the file after [end:onee]."""
    (root / "snippets/fixes/sectioned.sh").write_text(
        "# --8<-- [start:one]\nnvidia-smi topo -m\n# --8<-- [end:onee]\nrm -rf ./checkpoints\n", encoding="utf-8"
    )
    append_to_pages(root, "index", '\n```bash\n--8<-- "fixes/sectioned.sh:one"\n```\n')


def price_with_a_comma(root):
    """Issue 33: `31,20` in a flow mapping was "Keys should be strings (got 20)" (whatever today's price)."""
    path = root / "snippets/data/gpus.yaml"
    text, count = re.subn(
        r"price_eur_per_hour_from: (\d+)\.(\d+)",
        r"price_eur_per_hour_from: \1,\2",
        path.read_text(encoding="utf-8"),
        count=1,
    )
    assert count == 1
    path.write_text(text, encoding="utf-8")


def duplicated_anchor(root):
    """Issue 33: the second heading takes the first's { #id }; only the artifact check saw it, naming site/…html."""
    path = root / "docs/memory-formulas.it.md"
    text = path.read_text(encoding="utf-8")
    first, second = re.findall(r"\{ #([\w-]+) \}", text)[:2]
    path.write_text(text.replace(f"{{ #{second} }}", f"{{ #{first} }}", 1), encoding="utf-8")


def huge_image(root):
    """Issue 33: a 12 MB image published (checked on every file, linked or not)."""
    (root / "docs/assets/photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(12_000_000))


CASES = {
    "misspelt section end marker": (
        misspelt_section_end,
        (
            r"docs/index\.it\.md:\d+: snippets/fixes/sectioned\.sh:3: section marker "
            r"\[end:onee\] closes no section; section 'one' \(line 1\) is still open"
        ),
    ),
    "price with a decimal comma": (
        price_with_a_comma,
        (
            r"^ERROR +- +snippets/data/gpus\.yaml: machines\.[\w-]+: price_eur_per_hour_from: "
            r"a number written with a decimal comma"
        ),
    ),
    "heading anchor set twice": (
        duplicated_anchor,
        (
            r"^ERROR +- +docs/memory-formulas\.it\.md:\d+: heading anchor '#[\w-]+' is set "
            r"twice on this page \(first at line \d+\)"
        ),
    ),
    "image over the size limit": (
        huge_image,
        r"^ERROR +- +docs/assets/photo\.png: 12\.0 MB, over the 1 MB limit for an image",
    ),
    "implausible measurement": (
        lambda r: edit(
            r, "snippets/data/measurements.yaml", "    excluded: \"implies 107 %", "    note: \"implies 107 %"
        ),
        r"snippets/data/measurements\.yaml: measurements\.torchtune-8b-full-a6000\.tokens_per_s: implies 107%",
    ),
    "missing snippet": (
        lambda r: edit_pages(r, "index", TOPOLOGY, '--8<-- "checks/nope.sh"'),
        r"docs/index\.it\.md:\d+: broken snippet include: Snippet at path 'checks/nope\.sh' could not be found",
    ),
    "missing section": (
        lambda r: edit_pages(r, "index", TOPOLOGY, '--8<-- "checks/topology.sh:gone"'),
        r"docs/index\.it\.md: broken snippet include: Snippet section 'gone' could not be located",
    ),
    "nested include": (nested_missing, r"docs/index\.it\.md: broken snippet include: .*checks/nope\.sh"),
    "unknown table": (
        lambda r: edit(r, "docs/index.fr.md", "name=interconnects", "name=links"),
        r"docs/index\.fr\.md:\d+: placeholder .*unknown table 'links'",
    ),
    "unknown model key": (
        lambda r: edit(r, "docs/index.it.md", "gpu=h100 unit=mib", "gpu=b300 unit=mib"),
        r"docs/index\.it\.md:\d+: placeholder .*unknown gpu 'b300'",
    ),
    "zero GPUs": (
        lambda r: edit(r, "docs/index.fr.md", "world_size=4 zero_stage=3 step=5", "world_size=0 zero_stage=3 step=5"),
        r"docs/index\.fr\.md:\d+: placeholder .*world_size must be an integer >= 1",
    ),
    "negative params": (
        lambda r: edit(r, "docs/index.it.md", "{{ memory params=8e9 }}", "{{ memory params=-8e9 }}"),
        r"docs/index\.it\.md:\d+: placeholder .*invalid parameter count",
    ),
    "ZeRO stage 4": (
        lambda r: edit(r, "docs/memory-formulas.it.md", "world_size=4 zero_stage=3 }}", "world_size=4 zero_stage=4 }}"),
        r"docs/memory-formulas\.it\.md:\d+: placeholder .*zero_stage must be 0, 1, 2 or 3",
    ),
    "YAML that does not parse": (
        lambda r: edit(r, "snippets/data/needs.yaml", "rows:", "rows: [\n"),
        r"snippets/data/needs\.yaml: invalid YAML",
    ),
    "row without French": (
        lambda r: edit(r, "snippets/data/sharding.yaml", ", fr: Tout}", "}"),
        r"snippets/data/sharding\.yaml: rows\[1\]\.holds: missing translation for fr",
    ),
    "comment without French": (
        lambda r: edit(r, "snippets/comments.yaml", "fr: modèle, mémoire et pilote de chaque carte", "de: Modell"),
        r"^ERROR +- +snippets/comments\.yaml: entry \d+: missing translation for fr",
    ),
    "comment not in the catalogue": (
        lambda r: edit(r, "snippets/checks/topology.sh", "topo -m", "topo -m  # collegamenti"),
        (
            r"docs/index\.fr\.md: snippets/checks/topology\.sh:\d+: code comment 'collegamenti' has no "
            r"'fr' translation; add to snippets/comments\.yaml and translate:\n- it: collegamenti\n  fr: ''"
        ),
    ),
    "orphaned comment translation": (
        lambda r: edit(r, "snippets/nccl_check.py", "  # riscaldamento", ""),
        (
            r"^ERROR +- +snippets/comments\.yaml:\d+: 'riscaldamento' is the comment of no "
            r"code block of any page"
        ),
    ),
    "a Python block that could read its own comments": (  # issue 33, hole 3: verify/block_names.py
        lambda r: edit(r, "snippets/train.py", "import torch\n", "import torch\nimport inspect\n"),
        (
            r"^ERROR +- +docs/index\.it\.md: block 'train\.py' \(it, docs/index\.it\.md\), line \d+: "
            r"import inspect is not on the allow-list \(verify/block_names\.py"
        ),
    ),
    "a notebook cell that could read the cells' text": (  # issue 33, hole 3, in IPython
        lambda r: notebook_line(r, "fr", 2, "text = _ih[-1]"),
        (
            r"^ERROR +- +docs/memory-notebook\.fr\.ipynb: code cell 2, line 1: _ih is not on the allow-list "
            r"\(verify/block_names\.py"
        ),
    ),
    "an IPython magic in a notebook cell": (
        lambda r: notebook_line(r, "it", 3, "%history -n"),
        r"^ERROR +- +docs/memory-notebook\.it\.ipynb: code cell 3, line 1: '%history -n', a line of IPython",
    ),
    "code block typed into a page": (
        lambda r: append_to_pages(r, "gpu-finder", "\n```bash\nnvidia-smi\n```\n"),
        (
            r"^ERROR +- +docs/gpu-finder\.it\.md:\d+: a code block typed into the page: write it once in "
            r"snippets/ and include it"
        ),
    ),
    "languages include other snippets": (
        lambda r: edit(r, "docs/index.fr.md", TOPOLOGY, '--8<-- "checks/first_minutes.sh"'),
        (
            r"^ERROR +- +docs/index\.fr\.md:\d+: code block '--8<-- \"checks/first_minutes\.sh\"' where "
            r"docs/index\.it\.md:\d+ has '--8<-- \"checks/topology\.sh\"'"
        ),
    ),
    "heading anchor of one language": (
        lambda r: edit(r, "docs/memory-formulas.fr.md", "{ #sharding }", "{ #partitionnement }"),
        (
            r"^ERROR +- +docs/memory-formulas\.fr\.md:\d+: heading anchor '#partitionnement' where "
            r"docs/memory-formulas\.it\.md:\d+ has '#sharding'"
        ),
    ),
    "comment translation with a coding cookie": (
        comment_attack,
        (
            r"snippets/comments\.yaml: entry \d+: fr: "
            r"matches Python's coding-cookie rule"
        ),
    ),
    "second nccl_check.py block": (
        second_check_block,
        r"docs/index\.it\.md: block 'nccl_check\.py' \(it\): a second block with this title",
    ),
    "front matter that does not parse": (
        lambda r: edit(r, "docs/gpu-finder.fr.md", "title: Trouvez le GPU", "title: [Trouvez le GPU"),
        r"docs/gpu-finder\.fr\.md: front matter: invalid YAML \(line \d+\)",
    ),
    "nav entry without its French title": (
        lambda r: edit(r, "mkdocs.yml", "            Trova la GPU: Trouvez le GPU\n", ""),
        r"mkdocs\.yml: plugins\.i18n\.languages \(fr\)\.nav_translations: no fr title for the nav entry 'Trova la GPU'",
    ),
    "include of a symbolic link": (
        include_environment,
        (
            r"snippets/host\.txt: snippets/host\.txt is a symbolic link "
            r"\(to /proc/self/environ\)"
        ),
    ),  # every file of snippets/, before any page
    "static file linked to the environment": (
        lambda r: (r / "docs/assets/env.txt").symlink_to("/proc/self/environ"),
        r"docs/assets/env\.txt: docs/assets/env\.txt is a symbolic link \(to /proc/self/environ\)",
    ),
    "Mermaid diagram": (
        mermaid_diagram,
        r"docs/memory-formulas\.it\.md: has a Mermaid diagram: Material's JavaScript would load Mermaid",
    ),
    "notebook template loading a CDN script": (
        lambda r: edit(
            r,
            "mkdocs.yml",
            "      include_source: false\n",
            "      include_source: false\n      include_requirejs: true\n",
        ),
        r"docs/memory-notebook\.(it|fr)\.ipynb: loads a script from 'https://cdnjs\.cloudflare\.com/",
    ),
    "typography rule with an unknown space": (
        lambda r: edit(r, "hooks/render/typography.yaml", "    thousands: nnbsp", "    thousands: thin"),
        r"^ERROR +- +hooks/render/typography\.yaml: languages\.fr\.thousands: Input should be 'nbsp' or 'nnbsp'",
    ),
    "interface string without French": (
        lambda r: edit(r, "hooks/render/interface.yaml", "    fr: Lien permanent\n", ""),
        r"^ERROR +- +hooks/render/interface\.yaml: attributes\[1\]: missing translation for fr",
    ),
    "site stylesheet importing from another origin": (
        lambda r: (r / "docs/assets/guide.css").write_text(
            "@import url(https://fonts.example.net/a.css);\n"
            + (r / "docs/assets/guide.css").read_text(encoding="utf-8"),
            encoding="utf-8",
        ),
        r"^ERROR +- +docs/assets/guide\.css: loads 'https://fonts\.example\.net/a\.css'",
    ),
    "page in Italian only": (
        lambda r: (r / "docs/memory-formulas.fr.md").unlink(),
        r"docs/memory-formulas\.fr\.md: missing; every page needs every language",
    ),
    "broken link": (
        lambda r: edit(r, "docs/index.fr.md", "(memory-formulas.md)", "(memory-formula.md)"),
        r"index\.fr\.md.*memory-formula\.md",
    ),
    "broken anchor": (
        lambda r: edit(r, "docs/index.it.md", "(memory-formulas.md)", "(memory-formulas.md#nowhere)"),
        r"index\.it\.md.*nowhere",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_fails_the_build(case, warm_repo_copy, tmp_path, forked_build_site):
    break_it, message = CASES[case]
    break_it(warm_repo_copy)
    # tests.conftest.build_site, forked from a process that imported MkDocs' stack once, on a
    # copy that holds the checkout's build caches (what the case breaks is computed again)
    result = forked_build_site(tmp_path / "out", config=warm_repo_copy / "mkdocs.yml")
    assert result.returncode != 0, f"{case}: the build passed"
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    records = re.split(r"\n(?=(?:ERROR|WARNING|INFO|DEBUG) )", result.stderr)  # a message may go on for lines
    errors = [record.rstrip("\n") for record in records if record.startswith(("ERROR", "WARNING"))]
    assert any(re.search(message, error) for error in errors), "\n".join(errors) or result.stderr[-3000:]


def test_an_unbroken_copy_builds_and_computes_nothing_again(warm_repo_copy, tmp_path, forked_build_site):
    """The control of the cases above: the copy as it is builds, and its build finds what it
    would compute in the caches the copy got (``tests.conftest.BUILD_CACHES``), so a case's
    build computes again only what its break changed. A store missing from the list would be
    written here (and computed again by every case). The compiled templates are the exception:
    their entries are named after the template's file too, and the copy's ``overrides/`` are
    other files (the theme's own templates are found)."""
    caches = warm_repo_copy / ".cache"

    def entries() -> set[str]:
        return {path.relative_to(caches).as_posix() for path in caches.rglob("*") if path.is_file()}

    before = entries()
    result = forked_build_site(tmp_path / "out", config=warm_repo_copy / "mkdocs.yml")
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(entry for entry in entries() - before if not entry.startswith("templates/")) == []
