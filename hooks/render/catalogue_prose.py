"""Facts of the catalogue stated in prose, rendered from ``snippets/data/gpus.yaml``.

A sentence that names the cards with the most memory, or the machines the guide prices, goes
stale the day a card or a machine is added if a page types it. These placeholders write it
from the catalogue, in the page's language (the words: ``snippets/data/prose.yaml``; lists
joined by Babel's ``format_list``, "a, b e c" / "a, b et c"):

- ``{{ largest_cards count=3 }}``: the ``count`` cards with the most memory (nvidia-smi's
  ``memory_mib``), largest first, each with its memory as ``{{ gpu_memory }}`` writes it:
  "la B200 con 192,3 GB, la H200 con 150,8 GB e la RTX PRO 6000 con 102,6 GB".
- ``{{ priced_machines }}``: every machine of ``machines`` (those the guide gives a price
  for), in the file's order: "4 × RTX 4090 e 8 × H100"; ``prices=yes``: each with its hourly
  price, "4 × RTX 4090 da 2,36 €/h e 8 × H100 da 31,20 €/h".

- ``{{ first_fit model=… task=… [cards=1] [method=ddp | context=8192] [seq_len=… kv_dtype=…
  concurrent=… recompute=… offload=… micro_batch=…] }}``: the smallest card of the
  catalogue that holds the job, as the finder answers it (``hooks/finder/compute.py``'s job
  with those inputs: training and LoRA at worst with full recomputation; serving too);
- ``{{ fitting_cards … }}``: every card that holds that job, smallest first;
- ``{{ finder_url … }}``: ``gpu-finder.md?model=…``, the finder opened on that job (a link
  from a sentence to the job it describes: tests/site/test_finder_links.py checks each
  link's job gives what its text says);
- ``{{ largest_short model=… task=… [cards=1] [method=ddp] }}``: the largest card that holds
  the job's model states but not its activations (the finder's "short" cards).

A card is named by its ``short_name`` (its ``name`` when it has none). A sentence whose fact
no longer holds (no card fits, none is short) is a build error, never a wrong page.
"""

from __future__ import annotations

from collections.abc import Callable

from babel.lists import format_list

from hooks.data.load import load_model
from hooks.errors import RenderError
from hooks.render.numbers import gpu_memory, price
from hooks.render.placeholders import Args


def _prose_name(card) -> str:
    return card.short_name or card.name


def largest_cards(raw: dict[str, str], lang: str) -> str:
    """``{{ largest_cards count=N }}``: the N cards of gpus.yaml with the most memory, largest first."""
    count = Args(raw, {"count"}).int("count", minimum=1)
    cards = sorted(load_model("gpus").gpus.items(), key=lambda item: -item[1].memory_mib)[:count]
    pattern = load_model("prose").card_memory[lang]
    return format_list(
        [pattern.format(card=_prose_name(card), memory=gpu_memory({"gpu": key}, lang)) for key, card in cards],
        locale=lang,
    )


def priced_machines(raw: dict[str, str], lang: str) -> str:
    """``{{ priced_machines [prices=yes] }}``: the machines gpus.yaml gives a price for, in its order."""
    prices = Args(raw, {"prices"}).str("prices", "no")
    if prices not in ("yes", "no"):
        raise RenderError(f"prices={prices} is not yes or no")
    gpus, prose = load_model("gpus"), load_model("prose")
    shown = []
    for key, machine in gpus.machines.items():
        name = prose.machine[lang].format(count=machine.count, card=_prose_name(gpus.gpus[machine.gpu]))
        shown.append(
            prose.machine_price[lang].format(machine=name, price=price({"machine": key}, lang))
            if prices == "yes"
            else name
        )
    return format_list(shown, locale=lang)


# The job inputs a sentence may set beyond the choice (finder.js's JOB_INPUTS that the pages
# use), each kept in the finder link's query as the page's script reads it.
JOB_INPUTS = {
    "seq_len": "int",
    "micro_batch": "int",
    "recompute": "str",
    "offload": "str",
    "kv_dtype": "str",
    "concurrent": "int",
}
CHOICE = {"model", "task", "cards", "method", "context"}


def finder_job(raw: dict[str, str]) -> tuple[dict, dict[str, str]]:
    """The finder's job a sentence names (``model= task= [cards=1] [method=ddp | context=]`` and
    any of ``JOB_INPUTS``): ``vram.answer_job``'s answer, as the page computes it for the same
    choice (``hooks.finder.compute.job`` and the inputs), and the query of its link. Raises
    RenderError for an unknown choice, one the finder refuses, or an input the calculator refuses."""
    import vram
    from hooks.finder.compute import job, load_catalogue, options
    from vram.job import JobError

    args = Args(raw, CHOICE | set(JOB_INPUTS))
    catalogue = load_catalogue()
    model, task = args.str("model"), args.str("task")
    for name, value, known in (("model", model, catalogue.models), ("task", task, catalogue.tasks)):
        if value not in known:
            raise RenderError(f"unknown {name} {value!r} (known: {', '.join(known)})")
    cards = args.int("cards", 1, minimum=1)
    serving = catalogue.tasks[task]["kind"] == "serving"
    option = (
        args.str("context", str(catalogue.settings["default"]["context"])) if serving else args.str("method", "ddp")
    )
    if option not in options(catalogue, task) and not (serving and option.isdigit()):
        raise RenderError(
            f"{'context' if serving else 'method'}={option} is not one of {', '.join(options(catalogue, task))}"
        )
    query = {"model": model, "task": task, "cards": str(cards), ("context" if serving else "method"): option}
    inputs: dict = {}
    for name, kind in JOB_INPUTS.items():
        if name in raw:
            inputs[name] = args.int(name, minimum=1) if kind == "int" else args.str(name)
            query[name] = str(inputs[name])
    try:
        found = vram.answer_job({**job(catalogue, model, task, cards, option), **inputs})
    except JobError as exc:
        raise RenderError(f"{model} {task} on {cards} cards with {option}: {exc}") from None
    return found, query


def _finder_answer(raw: dict[str, str]) -> dict:
    return finder_job(raw)[0]


def finder_url(raw: dict[str, str], lang: str) -> str:
    """``{{ finder_url model= task= … }}`` -> ``gpu-finder.md?model=…&task=…``: the finder page
    opened on the job the sentence describes (its arguments: ``finder_job``), for a Markdown
    link; finder.js reads the choice and the inputs from the query."""
    from urllib.parse import urlencode

    return "gpu-finder.md?" + urlencode(finder_job(raw)[1])


def first_fit(raw: dict[str, str], lang: str) -> str:
    """``{{ first_fit model= task= … }}``: the smallest card that holds the job (the finder's first fit)."""
    found = _finder_answer(raw)
    if not found["fits"]:
        raise RenderError("no card of the catalogue holds this job: rewrite the sentence")
    return _prose_name(load_model("gpus").gpus[found["fits"][0]["gpu"]])


def fitting_cards(raw: dict[str, str], lang: str) -> str:
    """``{{ fitting_cards model= task= … }}``: every card that holds the job, smallest first,
    joined as the page's language joins a list ("H200 e B200")."""
    found = _finder_answer(raw)
    if not found["fits"]:
        raise RenderError("no card of the catalogue holds this job: rewrite the sentence")
    gpus = load_model("gpus").gpus
    return format_list([_prose_name(gpus[fit["gpu"]]) for fit in found["fits"]], locale=lang)


def largest_short(raw: dict[str, str], lang: str) -> str:
    """``{{ largest_short model= task= }}``: the largest card that holds the model states but not the activations."""
    found = _finder_answer(raw)
    if not found["short"]:
        raise RenderError(
            "no card of the catalogue holds this job's model states without its activations: rewrite the sentence"
        )
    gpus = load_model("gpus").gpus
    return _prose_name(gpus[max(found["short"], key=lambda short: gpus[short["gpu"]].memory_mib)["gpu"]])


CATALOGUE_PROSE: dict[str, Callable[[dict[str, str], str], str]] = {
    "largest_cards": largest_cards,
    "priced_machines": priced_machines,
    "first_fit": first_fit,
    "fitting_cards": fitting_cards,
    "finder_url": finder_url,
    "largest_short": largest_short,
}
