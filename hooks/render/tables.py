"""Table placeholders: ``{{ table NAME ... }}`` -> a Markdown table in the page's language.

Rows and per-language text live in ``snippets/data/NAME.yaml``; the sharding table's
numbers are computed by ``vram`` (never typed). Cells may hold number placeholders
(``{{ gpu_memory gpu=h200 }}``), expanded after the table.
"""

from __future__ import annotations

from collections.abc import Callable

import vram
from hooks.data.load import label, load_model
from hooks.errors import RenderError
from hooks.render.calibration import calibration_table
from hooks.render.locale_format import format_quantity, format_range
from hooks.render.markdown_table import markdown_table
from hooks.render.numbers import calculator_errors, model_config
from hooks.render.placeholders import Args
from hooks.render.timing import run_cost_table
from vram.units import bytes_to_gb


def _columns(data, lang: str, where: str, keys: list[str]) -> list[str]:
    return [label(data.columns, key, lang, f"{where}: columns") for key in keys]


def needs_table(raw: dict[str, str], lang: str) -> str:
    """ "Do you need more than one card": three columns of translated text (``NeedsFile``)."""
    Args(raw, {"name"})
    where = "snippets/data/needs.yaml"
    data = load_model("needs")
    keys = ["job", "one_card", "several_cards"]
    body = [[getattr(row, key)[lang] for key in keys] for row in data.rows]
    # A class for its phone layout (guide.css): md_in_html renders the table inside the div.
    return f'<div class="needs-table" markdown>\n\n{markdown_table(_columns(data, lang, where, keys), body)}\n\n</div>'


def sharding_table(raw: dict[str, str], lang: str) -> str:
    """Per-GPU model states of DDP / ZeRO-1/2/3 for ``params`` on each of ``world_sizes`` (``ShardingFile``)."""
    args = Args(raw, {"name", "params", "world_sizes", "optimizer"})
    where = "snippets/data/sharding.yaml"
    data = load_model("sharding")
    params, world_sizes = args.params(), args.ints("world_sizes", minimum=1)
    optimizer = args.str("optimizer", "adamw")
    per_gpu = label(data.columns, "per_gpu", lang, f"{where}: columns")
    header = _columns(data, lang, where, ["method", "holds"]) + [per_gpu.format(world_size=n) for n in world_sizes]
    body = []
    for row in data.rows:
        cells = [row.method[lang], row.holds[lang]]
        with calculator_errors():
            for n in world_sizes:
                states = vram.model_states_per_gpu(params, n, row.zero_stage, optimizer)
                cells.append(format_quantity(bytes_to_gb(states.total_bytes), "gb", lang, 1))
        body.append(cells)
    return markdown_table(header, body)


def frameworks_table(raw: dict[str, str], lang: str) -> str:
    """Per-GPU memory of ``model`` under every training method of the finder (each names its
    framework: DDP under PyTorch AMP, DeepSpeed ZeRO-1/2/3, FSDP2; the paper's accounting is
    the sharding table's), on each of ``world_sizes``; ``vram.framework_memory``, activations excluded.
    Method labels come from ``snippets/data/finder.yaml``, column titles from sharding.yaml."""
    args = Args(raw, {"name", "model", "world_sizes", "optimizer"})
    where = "snippets/data/sharding.yaml"
    sharding, methods = load_model("sharding"), load_model("finder").methods
    world_sizes, optimizer = args.ints("world_sizes", minimum=1), args.str("optimizer", "adamw")
    with calculator_errors():
        shape = vram.model_shape(model_config(args.str("model")))
    per_gpu = label(sharding.columns, "per_gpu", lang, f"{where}: columns")
    header = _columns(sharding, lang, where, ["method"]) + [per_gpu.format(world_size=n) for n in world_sizes]
    body = []
    for method in methods.values():
        if method.framework == "zero-paper":
            continue  # the sharding table shows the paper's accounting
        cells = [method.label[lang]]
        with calculator_errors():
            for n in world_sizes:
                memory = vram.framework_memory(method.framework, shape, n, method.zero_stage, optimizer)
                cells.append(format_quantity(bytes_to_gb(memory.per_gpu_bytes), "gb", lang, 1))
        body.append(cells)
    return markdown_table(header, body)


def interconnects_table(raw: dict[str, str], lang: str) -> str:
    """Links between cards: name, approximate bandwidth (GB/s), where they are found (``InterconnectsFile``)."""
    Args(raw, {"name"})
    where = "snippets/data/interconnects.yaml"
    data = load_model("interconnects")
    body = []
    for row in data.rows:
        low, high = row.bandwidth_gb_per_s
        speed = format_range(low, high, "gb_per_s", lang, 0)
        if row.approximate:
            speed = label(data.qualifiers, "approximate", lang, f"{where}: qualifiers").format(value=speed)
        if row.per_direction:
            speed = f"{speed} {label(data.qualifiers, 'per_direction', lang, f'{where}: qualifiers')}"
        body.append([row.link[lang], speed, row.where[lang]])
    return markdown_table(_columns(data, lang, where, ["link", "speed", "where"]), body)


TABLES: dict[str, Callable[[dict[str, str], str], str]] = {
    "needs": needs_table,
    "sharding": sharding_table,
    "frameworks": frameworks_table,
    "interconnects": interconnects_table,
    "run_cost": run_cost_table,
    "calibration": calibration_table,
}


def table(raw: dict[str, str], lang: str) -> str:
    """``{{ table name=NAME ... }}``: dispatch to the named table."""
    name = raw.get("name")
    if name not in TABLES:
        raise RenderError(f"unknown table {name!r} (known: {', '.join(sorted(TABLES))})")
    return TABLES[name](raw, lang)
