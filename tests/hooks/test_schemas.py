"""Valid YAML of the wrong shape is refused by schema with one line naming the file and the key
(../shared/cases/integrity.md, "Data shape"); so are front matter, nav translations, empty
snippets and broken links in notebook cells."""

from __future__ import annotations

import re

import pytest
import yaml

from hooks.checks.snippet_includes import check_snippets
from hooks.checks.unchecked_by_mkdocs import check_front_matter, check_nav_translations, check_notebook_links
from hooks.data.load import check_data_files, load_yaml
from hooks.errors import RenderError
from hooks.render.markdown import render_markdown
from tests.conftest import REPO_ROOT


def edit(path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path.name} no longer contains {old!r}: update this test"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def refused(data_dir) -> str:
    with pytest.raises(RenderError) as error:
        check_data_files(data_dir)
    line = str(error.value)
    assert "\n" not in line
    return line


DATA_CASES = {  # file, old text, new text, the line (regex)
    "row without bandwidth": (
        "interconnects.yaml",
        "    bandwidth_gb_per_s: [25, 32]\n",
        "",
        r"interconnects\.yaml: rows\[1\]\.bandwidth_gb_per_s: Field required",
    ),
    "a scalar for a list": (
        "interconnects.yaml",
        "bandwidth_gb_per_s: [25, 32]",
        "bandwidth_gb_per_s: 25",
        r"interconnects\.yaml: rows\[1\]\.bandwidth_gb_per_s: Input should be a valid list \(got 25\)",
    ),
    "sharding without columns": ("sharding.yaml", "columns:", "colonnes:", r"sharding\.yaml: columns: Field required"),
    "finder without cards": (
        "finder.yaml",
        "  cards: [1, 2, 4, 8]\n",
        "",
        r"finder\.yaml: settings\.cards: Field required",
    ),
    "label with {nope}": (
        "finder.yaml",
        'caption: {it: "Schede che bastano: {choice}"',
        'caption: {it: "Schede che bastano: {nope}"',
        r"finder\.yaml: labels: caption: it: unknown field \{nope\}: this text may use only \{choice\}",
    ),
    "label with a lone {": (
        "finder.yaml",
        'fr: "Cartes qui suffisent : {choice}"',
        'fr: "Cartes qui suffisent : {choice"',
        r"finder\.yaml: labels: caption: fr: expected '\}' before end of string",
    ),
    "translation that is a list": (
        "sharding.yaml",
        "holds: {it: Tutto, fr: Tout}",
        "holds: {it: Tutto, fr: [a, b]}",
        r"sharding\.yaml: rows\[1\]\.holds\.fr: Input should be a valid string \(got \['a', 'b'\]\)",
    ),
    "translation that is a mapping": (
        "needs.yaml",
        "job: {it: Lavoro, fr: Tâche}",
        "job: {it: Lavoro, fr: {oops: 1}}",
        r"needs\.yaml: columns\.job\.fr: Input should be a valid string \(got \{.oops.: 1\}\)",
    ),
    "translation missing": (
        "units.yaml",
        "gb: {it: GB, fr: Go}",
        "gb: {it: GB}",
        r"units\.yaml: labels\.gb: missing translation for fr",
    ),
    "a language the site lacks": (
        "units.yaml",
        "gb: {it: GB, fr: Go}",
        "gb: {it: GB, fr: Go, de: GB}",
        r"units\.yaml: labels\.gb: 'de' is not a language of the site \(it, fr",
    ),
    "duplicate key": (
        "gpus.yaml",
        "  h100:",
        "  h200:",
        r"gpus\.yaml: invalid YAML \(line \d+\): duplicate key 'h200'",
    ),
    "aliases (a billion laughs)": (  # 9^6 values in seven lines; 9^9 in ten took 31 s and 4.5 GB
        "gpus.yaml",
        "gpus:\n",
        "laughs:\n  a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 7))
        + "gpus:\n",
        r"gpus\.yaml: invalid YAML \(line \d+\): an alias \(\*name\) repeats what an anchor",
    ),
    "markup in a name": (  # Markdown passes HTML through: a link to another host in the guide's prose
        "gpus.yaml",
        "    short_name: H200\n",
        '    short_name: \'H200 <a href="https://evil.example/">\'\n',
        r"gpus\.yaml: gpus\.h200\.short_name: .*'<' would start HTML markup in the page",
    ),
    "a comment of the page in a measurement's title": (
        "measurements.yaml",
        "    title: ",
        "    title: <!-- ",
        r"measurements\.yaml: sources\.[a-z0-9._-]+\.title: .*'<' would start HTML markup",
    ),
    "a bidirectional override in a translation": (
        "units.yaml",
        "gb: {it: GB, fr: Go}",
        "gb: {it: GB, fr: \"G\\u202eo\"}",
        r"units\.yaml: labels\.gb\.fr: .*a format character \(U\+202E\)",
    ),
    "unknown key (a typo)": (
        "sharding.yaml",
        "  - zero_stage: 0",
        "  - zero_stag: 0",
        r"sharding\.yaml: rows\[1\]\.zero_stag(e)?: ",
    ),
    "host path faster than peer-to-peer": (
        "interconnects.yaml",
        "bandwidth_gb_per_s: [4, 25]",
        "bandwidth_gb_per_s: [4, 30]",
        r"interconnects\.yaml: without_p2p\.pcie4-host\.bandwidth_gb_per_s: .*never faster",
    ),
    "card without its datasheet peak": (
        "gpus.yaml",
        "    bf16_dense_tflops: 165.2\n",
        "",
        r"gpus\.yaml: gpus\.rtx-4090\.bf16_dense_tflops: Field required",
    ),
    "a task answered as one of another job": (
        "finder.yaml",
        "    answers_of: full-adamw",
        "    answers_of: full-bf16",
        (
            r"finder\.yaml: tasks\.pretrain\.answers_of: 'full-bf16' is not a task "
            r"of its own answers with the same kind, optimizer"
        ),
    ),
    "machine of no card": (
        "gpus.yaml",
        "gpu: rtx-4090, count: 4",
        "gpu: rtx-4091, count: 4",
        r"gpus\.yaml: machines\.4x-rtx-4090\.gpu: 'rtx-4091' is not a card of gpus",
    ),
    "machine RAM with its unit": (
        "gpus.yaml",
        "count: 8, price_eur_per_hour_from: 31.20, host_ram_gb: not published",
        "count: 8, price_eur_per_hour_from: 31.20, host_ram_gb: 2 TB",
        r"gpus\.yaml: machines\.8x-h100\.host_ram_gb: ",
    ),
    "machine RAM left out": (
        "gpus.yaml",
        "count: 8, price_eur_per_hour_from: 31.20, host_ram_gb: not published,",
        "count: 8, price_eur_per_hour_from: 31.20,",
        r"gpus\.yaml: machines\.8x-h100\.host_ram_gb: Field required",
    ),
    "unpublished RAM that does not say so": (
        "gpus.yaml",
        'host_ram_source: "not published: the guide says the catalogue row shows the RAM, without a figure"}\n  8x',
        'host_ram_source: "the catalogue"}\n  8x',
        r"gpus\.yaml: machines\.4x-rtx-4090: .*host_ram_source: must start with 'not published'",
    ),
}


@pytest.mark.parametrize("case", list(DATA_CASES))
def test_wrong_shape_is_one_line_naming_file_and_key(case, data_dir):
    name, old, new, message = DATA_CASES[case]
    edit(data_dir / name, old, new)
    line = refused(data_dir)
    assert re.search(message, line), line


def memory_key(card: dict) -> str:
    return next(key for key in card if key.startswith("memory_"))  # memory_gb or memory_mib


def test_a_card_without_its_memory_or_with_141_gb_is_refused(data_dir):
    path = data_dir / "gpus.yaml"
    catalogue = yaml.safe_load(path.read_text(encoding="utf-8"))
    key = memory_key(catalogue["gpus"]["h200"])
    del catalogue["gpus"]["h200"][key]
    path.write_text(yaml.safe_dump(catalogue, allow_unicode=True), encoding="utf-8")
    assert re.search(rf"gpus\.yaml: gpus\.h200\.{key}: Field required", refused(data_dir))
    catalogue["gpus"]["h200"][key] = "141 GB"
    path.write_text(yaml.safe_dump(catalogue, allow_unicode=True), encoding="utf-8")
    assert re.search(
        rf"gpus\.yaml: gpus\.h200\.{key}: Input should be a valid (number|integer) \(got '141 GB'\)", refused(data_dir)
    )


def test_a_data_file_without_a_schema_is_refused(data_dir):
    (data_dir / "prices.yaml").write_text("a: 1\n", encoding="utf-8")
    assert re.search(r"prices\.yaml: no schema for this file; add one to hooks/data/schemas\.py", refused(data_dir))


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_bad_data_fails_the_page_in_either_language(data_dir, lang):
    edit(data_dir / "sharding.yaml", "holds: {it: Tutto, fr: Tout}", "holds: {it: Tutto, fr: 3}")
    with pytest.raises(
        RenderError, match=r"sharding\.yaml: rows\[1\]\.holds\.fr: Input should be a valid string \(got 3\)"
    ):
        render_markdown("{{ table name=sharding params=8e9 world_sizes=4 }}", lang)


@pytest.mark.parametrize("lang", ["it", "fr"])
def test_a_number_that_overflows_is_one_line(lang):
    with pytest.raises(RenderError) as error:
        render_markdown("{{ memory params=1e400 }}", lang)
    assert str(error.value).startswith("placeholder {{ memory params=1e400 }}: params=1e400: ") and "\n" not in str(
        error.value
    )


def test_the_real_data_passes_and_is_returned_as_parsed():
    check_data_files()
    with open(REPO_ROOT / "snippets" / "data" / "units.yaml", encoding="utf-8") as units:
        assert load_yaml("units") == yaml.safe_load(units)


@pytest.mark.parametrize(
    "source, message",
    [
        ("---\ntitle: [unclosed\n---\n\n# Titolo\n", r"front matter: invalid YAML \(line 3\)"),
        ("---\ntitle: A\ntitle: B\n---\n", r"front matter: invalid YAML \(line 3\): duplicate key 'title'"),
        ("---\ntitel: Guida\n---\n", r"front matter: titel: Extra inputs are not permitted"),
        ("---\ntitle: [a, b]\n---\n", r"front matter: title: Input should be a valid string"),
        ("---\n- a\n---\n", r"front matter: expected `key: value` lines"),
        # the theme writes these unescaped into <title> and <meta content="...">: a script in the head
        (
            '---\ntitle: "Trouvez</title><script>alert(1)</script>"\n---\n',
            r"front matter: title: String should match pattern",
        ),
        ('---\ndescription: \'x" onload="alert(2)\'\n---\n', r"front matter: description: String should match pattern"),
        ("---\ntemplate: ../../x.html\n---\n", r"front matter: template: String should match pattern"),
    ],
)
def test_front_matter_must_parse(source, message):
    with pytest.raises(RenderError, match=message):
        check_front_matter(source)


def test_good_front_matter_and_none_pass():
    check_front_matter("---\ntitle: Guida\ndescription: Una guida\n---\n\n# Guida\n")
    check_front_matter("# Guida\n\n---\n\nTesto\n")


NAV = [{"Guida": "index.md"}, {"Sezione": [{"Pagina": "p.md"}]}]


def test_every_nav_entry_needs_its_translation():
    check_nav_translations(NAV, {"fr": {"Guida": "Guide", "Sezione": "Section", "Pagina": "Page"}})
    with pytest.raises(
        RenderError,
        match=r"mkdocs\.yml: plugins\.i18n\.languages \(fr\)\.nav_translations: no fr title for the nav entry 'Pagina'",
    ):
        check_nav_translations(NAV, {"fr": {"Guida": "Guide", "Sezione": "Section"}})
    with pytest.raises(RenderError, match=r"translates 'Guid', which is not a nav entry"):
        check_nav_translations(NAV, {"fr": {"Guida": "Guide", "Sezione": "Section", "Pagina": "Page", "Guid": "x"}})


def test_the_site_nav_is_translated():
    """mkdocs.yml itself: every nav entry has its French title."""
    from verify.languages import DEFAULT_LANGUAGE, read_mkdocs_yml

    config = read_mkdocs_yml(REPO_ROOT / "mkdocs.yml")
    i18n = next(p["i18n"] for p in config["plugins"] if isinstance(p, dict) and "i18n" in p)
    check_nav_translations(
        config["nav"],
        {
            lang["locale"]: lang.get("nav_translations")
            for lang in i18n["languages"]
            if lang["locale"] != DEFAULT_LANGUAGE
        },
    )


def test_an_empty_snippet_file_is_refused(tmp_path):
    (tmp_path / "vuoto.sh").write_text("\n  \n", encoding="utf-8")
    (tmp_path / "pieno.sh").write_text("echo ok\n", encoding="utf-8")
    config = {"base_path": [str(tmp_path)]}
    check_snippets('```bash\n--8<-- "pieno.sh"\n```\n', config)
    with pytest.raises(RenderError, match=r"snippet include 'vuoto\.sh': the file is empty"):
        check_snippets('```bash\n--8<-- "vuoto.sh"\n```\n', config)


SITE = {"", "memory-notebook/", "gpu-finder/", "assets/x.png", "fr/", "fr/memory-notebook/", "fr/gpu-finder/"}


@pytest.mark.parametrize("page", ["memory-notebook/", "fr/memory-notebook/"])
def test_links_of_notebook_cells_must_lead_somewhere(page):
    check_notebook_links(
        '<a href="../gpu-finder/">ok</a><a href="#x">top</a><a href="https://example.org/">out</a>'
        '<a href="../gpu-finder/#find-gpu">anchor</a><a href="../">home</a>',
        page,
        SITE,
    )
    with pytest.raises(
        RenderError, match=r"a Markdown cell links to '\.\./gpu-fnder/', which leads to no page or file of the site"
    ):
        check_notebook_links('<a href="../gpu-fnder/">typo</a>', page, SITE)
    with pytest.raises(RenderError, match=r"links to 'memory-formulas\.md'"):
        check_notebook_links('<a href="memory-formulas.md">md</a>', page, SITE)
