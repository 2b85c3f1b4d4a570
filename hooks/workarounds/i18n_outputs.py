"""Per-language outputs that Material + static-i18n get wrong (issue 6, cases 1 and 2).

- **Search.** static-i18n merges every language into one ``search/search_index.json``
  (ultrabug/mkdocs-static-i18n#31, #271): French readers get Italian results and
  each page twice. After the build the merged index is split into one index per
  language (``search/`` for the default language, ``fr/search/`` for French), and the
  pages of each language point Material's ``__config.base`` at their language root,
  so its search fetches that language's index and resolves results against it.
- **404.** Each language pass writes ``404.html`` at the root, so the last language
  wins, with the alternates of whatever page was built last. The default language
  keeps ``404.html``; every other language gets ``<lang>/404.html``; the language
  switcher of a 404 page points to the language homes.

The transforms are plain functions of text and data; ``hooks/mkdocs_glue.py`` calls them from
its MkDocs events, inside its one error boundary.

It can go, part by part, when static-i18n writes one search index per language (#31, #271)
and one 404 page per language: ``tests/site/test_gates_i18n.py`` says whether it still must.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from hooks.render.script_json import script_json
from hooks.render.typography import typeset_html, typeset_search_index

CONFIG_RE = re.compile(r'(<script id="__config" type="application/json">)(.*?)(</script>)', re.DOTALL)


def split_search_index(index: dict, languages: list[str], default: str) -> dict[str, dict]:
    """A merged Material search index -> ``{lang: index}``.

    An entry whose location starts with ``<lang>/`` (a non-default language) goes to
    that language, its location made relative to the language root; every other
    entry belongs to the default language. Each index names only its own language
    for lunr.
    """
    others = [lang for lang in languages if lang != default]
    docs: dict[str, list[dict]] = {lang: [] for lang in languages}
    for entry in index["docs"]:
        location = entry["location"]
        lang = next((lang for lang in others if location.startswith(f"{lang}/")), default)
        docs[lang].append(entry if lang == default else {**entry, "location": location[len(lang) + 1 :]})
    return {lang: {**index, "config": {**index["config"], "lang": [lang]}, "docs": docs[lang]} for lang in languages}


def rebase_config(html: str, lang: str) -> str:
    """Point ``__config.base`` (the site root) of a page at the root of ``lang``."""

    def replace(match: re.Match[str]) -> str:
        config = json.loads(match.group(2))
        config["base"] = config["base"].rstrip("/") + f"/{lang}/"
        return match.group(1) + script_json(config, sort_keys=True) + match.group(3)

    return CONFIG_RE.sub(replace, html, count=1)


# ------------------------------------------- what the hook file (hooks/mkdocs_glue.py) calls
def alternate_homes_for_404(config) -> None:
    """Before the 404 template renders: its language switcher points to the language homes."""
    i18n = config.plugins.get("i18n")
    if i18n is not None and i18n.extra_alternate:
        homes = copy.deepcopy(i18n.extra_alternate)  # the language homes
        # static-i18n sets the attribute per page (config.extra.alternate = ...), which
        # Jinja reads before the item: reset both, or the last page's links stay.
        config.extra["alternate"] = homes
        config.extra.alternate = homes


def write_language_404(output: str, lang: str, site_dir: Path) -> str:
    """Write the 404 page of ``lang`` (a non-default language) to ``<site_dir>/<lang>/404.html``
    and return ``""``: MkDocs skips an empty template, so the default language keeps ``/404.html``."""
    path = site_dir / lang / "404.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(typeset_html(rebase_config(output, lang), lang), encoding="utf-8")
    return ""


def write_search_indexes(config) -> None:
    """After static-i18n has built every language and merged the index: one index per language."""
    i18n = config.plugins.get("i18n")
    index_path = Path(config.site_dir) / "search" / "search_index.json"
    if i18n is None or i18n.building or not index_path.exists():
        return
    merged = json.loads(index_path.read_text(encoding="utf-8"))
    for lang, index in split_search_index(merged, list(i18n.build_languages), i18n.default_language).items():
        root = Path(config.site_dir) if lang == i18n.default_language else Path(config.site_dir) / lang
        out = root / "search" / "search_index.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        typeset = typeset_search_index(index, lang)  # results show the pages' typography
        out.write_text(json.dumps(typeset, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
