"""Compiled templates are reused by the next Jinja environment, and recompiled after an edit."""

from __future__ import annotations

import jinja2

from hooks.cache import InMemoryBytecodeCache


def _environment(source: str, cache: InMemoryBytecodeCache, compiled: list[str]) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.DictLoader({"page.html": source}), bytecode_cache=cache)
    original = env.compile

    def counting_compile(source, name=None, filename=None, raw=False, defer_init=False):
        compiled.append(name)
        return original(source, name, filename, raw, defer_init)

    env.compile = counting_compile
    return env


def test_second_environment_reuses_compiled_code():
    cache, compiled = InMemoryBytecodeCache(), []
    first = _environment("<h1>{{ title }}</h1>", cache, compiled).get_template("page.html")
    second = _environment("<h1>{{ title }}</h1>", cache, compiled).get_template("page.html")
    assert compiled == ["page.html"] and len(cache) == 1
    assert second.render(title="Guida") == first.render(title="Guida") == "<h1>Guida</h1>"


def test_edited_template_is_compiled_again():
    cache, compiled = InMemoryBytecodeCache(), []
    _environment("<h1>{{ title }}</h1>", cache, compiled).get_template("page.html")
    edited = _environment("<h2>{{ title }}</h2>", cache, compiled).get_template("page.html")
    assert compiled == ["page.html", "page.html"]
    assert edited.render(title="Guide") == "<h2>Guide</h2>"
