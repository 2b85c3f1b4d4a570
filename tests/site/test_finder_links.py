"""Every link from a sentence of the guide into the finder opens the job the sentence describes,
and that job gives what the link says (issue 35: the needs table's fp8 row opened a blank finder).

A link into the finder with a query (``gpu-finder/?model=…&task=…``, ``{{ finder_url … }}``)
names a card in its text: the card the sentence says holds the job, the smallest of the
catalogue that does. The expectation is derived here from the query, not typed:

- a reference choice (the query holds only the choice): the finder's own answer, in the
  built site's ``assets/finder-results.json`` (what the page shows; every answer there is
  checked against the calculator called directly in tests/finder/test_finder_data.py);
- a serving job with inputs (an fp8 KV cache, 32 sequences): ``vram.serving_memory_per_gpu``
  for those inputs against every card of gpus.yaml, as vLLM takes its share of the card
  (``gpu_memory_utilization`` of nvidia-smi's total, the reserve inside it).

Both languages link the same jobs in the same order, and every link of the needs table opens a
job, never the blank finder.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from bs4 import BeautifulSoup

import vram
from hooks.data.load import DATA_DIR, load_yaml
from tests.site.test_gates_common import LANGUAGES

pytestmark = pytest.mark.slow

PAGES = ("index.html", "memory-formulas/index.html", "gpu-finder/index.html")


def finder_links(site, lang: str) -> list[tuple[str, dict[str, str], str]]:
    """(page, query, link text) of every link into the finder from the pages of ``lang``."""
    found = []
    for name in PAGES:
        page = site / ("" if lang == LANGUAGES[0] else lang) / name
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for link in soup.select("article a[href]"):
            parts = urlsplit(str(link["href"]))
            if parts.path.rstrip("/").endswith("gpu-finder") and not parts.netloc:
                query = {key: values[0] for key, values in parse_qs(parts.query).items()}
                found.append((name, query, " ".join(link.get_text().split())))
    return found


def _short_names() -> dict[str, str]:
    gpus = load_yaml("gpus")["gpus"]
    return {key: card.get("short_name") or card["name"] for key, card in gpus.items()}


def expected_first_fit(site, query: dict[str, str]) -> str:
    """The card key that holds the query's job, smallest first (module docstring)."""
    choice = {"model", "task", "cards", "method", "context"}
    inputs = {key: value for key, value in query.items() if key not in choice}
    option = query.get("method") or query["context"]
    if not inputs:
        results = json.loads((site / "assets" / "finder-results.json").read_text(encoding="utf-8"))
        return results[query["model"]][query["task"]][query["cards"]][option]["fits"][0]["gpu"]
    finder, gpus = load_yaml("finder"), load_yaml("gpus")
    task = finder["tasks"][query["task"]]
    assert task["kind"] == "serving" and set(inputs) <= {"kv_dtype", "concurrent"}, query  # what this test derives
    config = vram.load_model_config(DATA_DIR / "models" / load_yaml("models")["models"][query["model"]]["config"])
    need = vram.serving_memory_per_gpu(
        config,
        task["weight_dtype"],
        context_length=int(query["context"]),
        batch=int(inputs.get("concurrent", 1)),
        kv_dtype=inputs.get("kv_dtype", "bf16"),
        tensor_parallel=int(query["cards"]),
    ).total_bytes
    share = finder["settings"]["serving"]["gpu_memory_utilization"]
    by_memory = sorted(gpus["gpus"], key=lambda key: gpus["gpus"][key]["memory_mib"])
    room = {
        key: int(share * card["memory_mib"] * 2**20) - gpus["reserve_mib"] * 2**20 for key, card in gpus["gpus"].items()
    }
    return next(key for key in by_memory if room[key] >= need)


def test_each_link_into_the_finder_opens_the_job_whose_card_it_names(built_site):
    names = _short_names()
    links = [(page, query, text) for page, query, text in finder_links(built_site, LANGUAGES[0]) if query]
    assert len(links) >= 10  # the needs table's claims, and the two machines' section
    for page, query, text in links:
        assert {"model", "task", "cards"} <= set(query) and ("method" in query) != ("context" in query), (page, query)
        named = [key for key, name in names.items() if name == text.split(" × ")[-1]]
        assert named, (page, text, "a link into the finder names the card its job needs")
        assert named == [expected_first_fit(built_site, query)], (page, query, text)


@pytest.fixture(scope="module")
def links_by_language(built_site) -> dict[str, list]:
    return {lang: finder_links(built_site, lang) for lang in LANGUAGES}


def test_both_languages_link_the_same_jobs_in_the_same_order(links_by_language):
    queries = {lang: [(page, query) for page, query, _ in links] for lang, links in links_by_language.items()}
    assert queries[LANGUAGES[0]] == queries[LANGUAGES[1]]


def test_every_link_of_the_needs_table_opens_a_job(built_site):
    for lang in LANGUAGES:
        page = built_site / ("" if lang == LANGUAGES[0] else lang) / "index.html"
        table = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select_one(".needs-table")
        hrefs = [a["href"] for a in table.select("a[href]") if "gpu-finder" in a["href"]]
        assert len(hrefs) >= 10 and all("?model=" in href for href in hrefs), (lang, hrefs)
