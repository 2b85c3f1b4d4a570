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

- ``{{ first_fit model=… task=… [cards=1] [method=ddp] }}``: the smallest card of the
  catalogue that holds the job, as the finder answers it (``hooks/finder/compute.py``:
  training and LoRA with the reference activations, at worst with full recomputation);
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
    return format_list([pattern.format(card=_prose_name(card), memory=gpu_memory({"gpu": key}, lang))
                        for key, card in cards], locale=lang)


def priced_machines(raw: dict[str, str], lang: str) -> str:
    """``{{ priced_machines [prices=yes] }}``: the machines gpus.yaml gives a price for, in its order."""
    prices = Args(raw, {"prices"}).str("prices", "no")
    if prices not in ("yes", "no"):
        raise RenderError(f"prices={prices} is not yes or no")
    gpus, prose = load_model("gpus"), load_model("prose")
    shown = []
    for key, machine in gpus.machines.items():
        name = prose.machine[lang].format(count=machine.count, card=_prose_name(gpus.gpus[machine.gpu]))
        shown.append(prose.machine_price[lang].format(machine=name, price=price({"machine": key}, lang))
                     if prices == "yes" else name)
    return format_list(shown, locale=lang)


def _finder_answer(raw: dict[str, str]) -> dict:
    from hooks.finder.compute import load_catalogue, result

    args = Args(raw, {"model", "task", "cards", "method"})
    model, task, cards, method = args.str("model"), args.str("task"), args.int("cards", 1, minimum=1), args.str("method", "ddp")
    catalogue = load_catalogue()
    for name, value, known in (("model", model, catalogue.models), ("task", task, catalogue.tasks),
                               ("method", method, catalogue.methods)):
        if value not in known:
            raise RenderError(f"unknown {name} {value!r} (known: {', '.join(known)})")
    if catalogue.tasks[task]["kind"] == "serving":
        raise RenderError(f"task {task!r} is a serving task: first_fit and largest_short answer training and LoRA")
    found = result(catalogue, model, task, cards, method)
    if found is None:
        raise RenderError(f"{model} {task} on {cards} cards with {method}: not offered by the finder")
    return found


def first_fit(raw: dict[str, str], lang: str) -> str:
    """``{{ first_fit model= task= }}``: the smallest card that holds the job (the finder's first fit)."""
    found = _finder_answer(raw)
    if not found["fits"]:
        raise RenderError("no card of the catalogue holds this job: rewrite the sentence")
    return _prose_name(load_model("gpus").gpus[found["fits"][0]["gpu"]])


def largest_short(raw: dict[str, str], lang: str) -> str:
    """``{{ largest_short model= task= }}``: the largest card that holds the model states but not the activations."""
    found = _finder_answer(raw)
    if not found["short"]:
        raise RenderError("no card of the catalogue holds this job's model states without its activations: "
                          "rewrite the sentence")
    gpus = load_model("gpus").gpus
    return _prose_name(gpus[max(found["short"], key=lambda short: gpus[short["gpu"]].memory_mib)["gpu"]])


CATALOGUE_PROSE: dict[str, Callable[[dict[str, str], str], str]] = {
    "largest_cards": largest_cards,
    "priced_machines": priced_machines,
    "first_fit": first_fit,
    "largest_short": largest_short,
}
