"""Shell snippets whose safety is a claim of the guide (the FAQ on ComfyUI)."""

from __future__ import annotations

import ipaddress
import re
import shlex

from tests.conftest import REPO_ROOT

COMFYUI = REPO_ROOT / "snippets" / "checks" / "comfyui_per_gpu.sh"


def test_comfyui_listens_on_loopback_and_is_reached_through_ssh():
    """No unauthenticated UI on a public address: every --listen names a loopback address
    (ComfyUI's bare --listen binds all interfaces), and the SSH line forwards each
    ComfyUI port to the same port on the reader's computer."""
    text = COMFYUI.read_text(encoding="utf-8")
    words = shlex.split(text.replace("\\\n", " "), comments=True)
    listens = [i for i, word in enumerate(words) if word == "--listen"]
    assert listens, "the snippet should say where ComfyUI listens"
    for i in listens:
        assert ipaddress.ip_address(words[i + 1]).is_loopback, words[i + 1]
    (gpus,) = re.findall(r"for gpu in ([\d ]+); do", text)
    base = int(re.search(r"--port \$\(\((\d+) \+ gpu\)\)", text).group(1))
    ports = {base + int(gpu) for gpu in gpus.split()}
    forwards = {words[i + 1] for i, word in enumerate(words) if word == "-L"}
    assert forwards == {f"{port}:localhost:{port}" for port in ports}
