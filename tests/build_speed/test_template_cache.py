"""Compiled templates are reused by the next Jinja environment, and recompiled after an edit."""

from __future__ import annotations

import jinja2

from hooks.cache import InMemoryBytecodeCache, TemplateCache, environment_settings


def _environment(source: str, cache: InMemoryBytecodeCache, compiled: list[str]) -> jinja2.Environment:
    return _folder_environment({"page.html": source}, cache, compiled)


def _folder_environment(
    templates: dict[str, str], cache: InMemoryBytecodeCache, compiled: list[str], filters: dict | None = None
) -> jinja2.Environment:
    """An environment of ``templates`` using ``cache``, appending each name it compiles to ``compiled``."""
    env = jinja2.Environment(loader=jinja2.DictLoader(templates), bytecode_cache=cache)
    env.filters.update(filters or {})
    original = env.compile

    def counting_compile(source, name=None, filename=None, raw=False, defer_init=False):
        compiled.append(name)
        return original(source, name, filename, raw, defer_init)

    env.compile = counting_compile  # type: ignore[method-assign]  # counts what Jinja compiles
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


# --- the development build's folder of compiled templates (.cache/templates) ------------------
def test_the_next_process_reads_compiled_templates_from_the_folder(tmp_path):
    templates = {
        "base.html": "<main>{% block body %}{% endblock %}</main>",
        "page.html": "{% extends 'base.html' %}{% block body %}{{ title | upper }}{% endblock %}",
    }
    first, compiled = TemplateCache(), []
    first.use_folder(tmp_path)
    expected = _folder_environment(templates, first, compiled).get_template("page.html").render(title="guida")
    assert sorted(compiled) == ["base.html", "page.html"] and len(list(tmp_path.glob("*.jinja"))) == 2

    later, compiled = TemplateCache(), []  # a new build process: nothing in memory
    later.use_folder(tmp_path)
    assert _folder_environment(templates, later, compiled).get_template("page.html").render(title="guida") == expected
    assert compiled == [] and expected == "<main>GUIDA</main>"

    edited, compiled = TemplateCache(), []
    edited.use_folder(tmp_path)
    templates = {**templates, "page.html": templates["page.html"].replace("upper", "lower")}
    assert (
        _folder_environment(templates, edited, compiled).get_template("page.html").render(title="GUIDA")
        == "<main>guida</main>"
    )
    assert compiled == ["page.html"], "an edited template is compiled again; its unchanged parent is read"


def test_an_entry_is_keyed_by_how_the_environment_calls_a_filter(tmp_path):
    """Jinja compiles a call to a filter that takes the context (``pass_context``) into a call
    that passes it: the same source under another filter table is other code."""
    templates = {"page.html": "{{ title | shout }}"}
    plain, context_filter = (
        (lambda value: value + "!"),
        jinja2.pass_context(lambda context, value: value + context["mark"]),
    )
    for filters, expected in (({"shout": plain}, "guida!"), ({"shout": context_filter}, "guida?")):
        cache, compiled = TemplateCache(), []
        cache.use_folder(tmp_path)
        assert (
            _folder_environment(templates, cache, compiled, filters)
            .get_template("page.html")
            .render(title="guida", mark="?")
            == expected
        )
        assert compiled == ["page.html"]
    assert len(list(tmp_path.glob("*.jinja"))) == 2


def test_a_filter_marked_after_a_build_is_described_again():
    """The description of an environment's filters is kept for the next template (one per build,
    not one per template), keyed by each filter's identity and how Jinja calls it: marking the
    same function ``pass_context`` afterwards (it sets an attribute on the function) is another key."""

    def shout(value):
        return value + "!"

    environment = jinja2.Environment()
    environment.filters["shout"] = shout
    before = environment_settings(environment)
    assert environment_settings(environment) == before
    jinja2.pass_context(shout)
    assert environment_settings(environment) != before
    marked = environment_settings(environment)
    environment.filters["shout"] = lambda value: value  # another, unmarked function under the same name
    assert environment_settings(environment) == before != marked


def test_a_corrupt_entry_is_compiled_again(tmp_path):
    cache, compiled = TemplateCache(), []
    cache.use_folder(tmp_path)
    _folder_environment({"page.html": "<p>{{ x }}</p>"}, cache, compiled).get_template("page.html")
    (entry,) = tmp_path.glob("*.jinja")
    entry.write_bytes(entry.read_bytes()[:20])
    later, compiled = TemplateCache(), []
    later.use_folder(tmp_path)
    assert (
        _folder_environment({"page.html": "<p>{{ x }}</p>"}, later, compiled).get_template("page.html").render(x=1)
        == "<p>1</p>"
    )
    assert compiled == ["page.html"]


def test_only_a_development_build_uses_the_folder():
    import importlib.util

    from tests.conftest import REPO_ROOT

    spec = importlib.util.spec_from_file_location("glue_under_test", REPO_ROOT / "hooks" / "mkdocs_glue.py")
    glue = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(glue)
    try:
        glue._build["verified"] = None  # a development build
        env = glue.on_env(jinja2.Environment(), config=None, files=None)
        assert (
            env.bytecode_cache is glue.TEMPLATE_CACHE
            and glue.TEMPLATE_CACHE.folder == REPO_ROOT / ".cache" / "templates"
        )
        glue._build["verified"] = object()  # the publish gate's record: a publication build
        glue.on_env(jinja2.Environment(), config=None, files=None)
        assert glue.TEMPLATE_CACHE.folder is None
    finally:
        glue.TEMPLATE_CACHE.use_folder(None)
