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

The transforms are plain functions of text and data; the MkDocs events at the end
only locate the files.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from mkdocs.plugins import event_priority

from hooks.script_json import script_json

from hooks.typography import typeset_html, typeset_search_index

CONFIG_RE = re.compile(r'(<script id="__config" type="application/json">)(.*?)(</script>)', re.S)


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
        if lang != default:
            entry = {**entry, "location": location[len(lang) + 1:]}
        docs[lang].append(entry)
    return {lang: {**index, "config": {**index["config"], "lang": [lang]}, "docs": docs[lang]}
            for lang in languages}


def rebase_config(html: str, lang: str) -> str:
    """Point ``__config.base`` (the site root) of a page at the root of ``lang``."""

    def replace(match: re.Match[str]) -> str:
        config = json.loads(match.group(2))
        config["base"] = config["base"].rstrip("/") + f"/{lang}/"
        return match.group(1) + script_json(config, sort_keys=True) + match.group(3)

    return CONFIG_RE.sub(replace, html, count=1)


# ----------------------------------------------------------------- MkDocs events
def _i18n(config):
    return config.plugins.get("i18n")


def _other_language(config) -> str | None:
    """The language being built when it is not the default one (its pages live under it)."""
    i18n = _i18n(config)
    if i18n is None or i18n.current_language == i18n.default_language:
        return None
    return i18n.current_language


def on_post_page(output, page, config, **kwargs):
    lang = _other_language(config)
    return rebase_config(output, lang) if lang else output


def on_template_context(context, template_name, config, **kwargs):
    i18n = _i18n(config)
    if template_name == "404.html" and i18n is not None and i18n.extra_alternate:
        homes = copy.deepcopy(i18n.extra_alternate)  # the language homes
        # static-i18n sets the attribute per page (config.extra.alternate = ...), which
        # Jinja reads before the item: reset both, or the last page's links stay.
        config.extra["alternate"] = homes
        setattr(config.extra, "alternate", homes)
    return context


def on_post_template(output, template_name, config, **kwargs):
    lang = _other_language(config)
    if template_name != "404.html" or lang is None:
        return output
    path = Path(config.site_dir) / lang / "404.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(typeset_html(rebase_config(output, lang), lang), encoding="utf-8")
    return ""  # MkDocs skips an empty template: the default language keeps /404.html


@event_priority(-200)  # after static-i18n (-100) has built every language and merged the index
def on_post_build(config, **kwargs):
    i18n = _i18n(config)
    index_path = Path(config.site_dir) / "search" / "search_index.json"
    if i18n is None or i18n.building or not index_path.exists():
        return
    merged = json.loads(index_path.read_text(encoding="utf-8"))
    for lang, index in split_search_index(merged, list(i18n.build_languages), i18n.default_language).items():
        root = Path(config.site_dir) if lang == i18n.default_language else Path(config.site_dir) / lang
        out = root / "search" / "search_index.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        index = typeset_search_index(index, lang)  # results show the pages' typography
        out.write_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
