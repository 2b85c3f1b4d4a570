"""The note under the NCCL check: where and when it ran and what it measured, or that
this build is not verified.

Pure functions (no MkDocs): ``render_note(record, lang)`` turns a verification record
(``verify.record``) into HTML in the reader's language, with the text of
``snippets/data/verification.yaml`` and numbers and dates formatted by Babel;
``insert_after_block(html, name, note)`` puts it right after the code block titled
``name``. A record marked ``"fixture": true`` is rendered with a visible "test data"
warning (the publish gate refuses such records unless a test allows them).
"""

from __future__ import annotations

import datetime
import html as html_lib

from babel.dates import format_date, format_time

from hooks.data.load import load_model
from hooks.errors import RenderError
from hooks.render.code_blocks import titled_block
from hooks.render.locale_format import format_number, format_quantity

DATA = "snippets/data/verification.yaml"


def _texts():
    return load_model("verification")  # hooks.data.schemas.VerificationFile: every key, in every language


def _t(data, key: str, lang: str) -> str:
    """The ``lang`` text of ``key`` (``and`` is the model's ``and_``): the schema guarantees both."""
    return getattr(data, "and_" if key == "and" else key)[lang]


def _when(utc: str, data, lang: str) -> str:
    try:
        moment = datetime.datetime.strptime(utc, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        raise RenderError(f"verification record: utc {utc!r} is not YYYY-MM-DDTHH:MM:SSZ") from None
    return _t(data, "when", lang).format(
        date=format_date(moment, "long", locale=lang),
        time=format_time(moment, "HH:mm", tzinfo=datetime.UTC, locale=lang),
    )


def _links(classes: list[str], data, lang: str) -> str:
    if not classes:
        return ""
    names = data.link_classes
    unknown = [c for c in classes if c not in names]
    if unknown:
        raise RenderError(f"{DATA}: link_classes lacks {', '.join(unknown)}")
    labels = [names[c][lang] for c in classes]
    return _t(data, "links", lang).format(classes=_t(data, "and", lang).join(labels))


def render_note(record: dict | None, lang: str) -> str:
    """HTML for the note; ``record`` None means a development build (not verified).

    ``record`` is one ``verify.record.check_record`` accepted (``verify.record_schema``): every
    field is there with its type. One GPU gets its own sentence, "1 GPU", without a busbw.
    Raises RenderError for a missing text.
    """
    data = _texts()
    if record is None:
        return f'<p class="verification verification-none"><small>{html_lib.escape(_t(data, "unverified", lang))}</small></p>'
    gpu, measured, versions = record["gpu"], record["measured"], record["versions"]
    fields = dict(
        when=_when(record["utc"], data, lang),
        rate=format_number(measured["allreduce_per_s"], lang, 1),
        size=format_quantity(measured["size_bytes"] / 1e9, "gb", lang, 2),
        torch=versions["torch"],
        cuda=versions["cuda"],
        nccl=versions["nccl"],
    )
    if measured["world_size"] == 1:
        body = _t(data, "verified_one_gpu", lang).format(model=gpu["model"], **fields)
    else:
        body = _t(data, "verified", lang).format(
            gpus=_t(data, "gpus", lang).format(count=gpu["count"], model=gpu["model"]),
            links=_links(record["links"]["classes"], data, lang),
            algbw=format_quantity(measured["algbw_gb_per_s"], "gb_per_s", lang, 1),
            busbw=format_quantity(measured["busbw_gb_per_s"], "gb_per_s", lang, 1),
            **fields,
        )
    warning = f"<strong>{html_lib.escape(_t(data, 'fixture', lang))}</strong> " if record["fixture"] else ""
    kind = "warning" if record["fixture"] else "success"
    return (
        f'<div class="admonition {kind} verification" data-snippet-sha256="{html_lib.escape(record["snippet_sha256"])}">'
        f'<p class="admonition-title">{html_lib.escape(_t(data, "title", lang))}</p>'
        f"<p>{warning}{html_lib.escape(body)}</p></div>"
    )


def insert_after_block(html: str, name: str, note: str) -> str:
    """``html`` with ``note`` right after the code block titled ``name`` (unchanged without one).

    Raises RenderError for an unclosed block."""
    span = titled_block(html, name)
    if span is None:
        return html
    return html[: span[1]] + note + html[span[1] :]
