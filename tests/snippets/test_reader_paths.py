"""Every path a reader runs is executed (issue 33, hole 2): the branches of the bound blocks
that only a reader takes, run as the page launches them, on a tiny model and tokenizer made
here with ``save_pretrained`` (no download) and a small text file.

- ``train_hf.py`` without ``--tiny`` (its ``else:``: the tokenizer, the data file, padding and
  the label mask), under the guide's own line (``accelerate launch --num_processes 4
  --mixed_precision bf16 train_hf.py``, on 2 processes), with ``--model FOLDER --data FILE``
  as a reader passes them. What the Trainer computed its first loss on (``record_hf.py``) is
  held to rows built here from the text with the ``tokenizers`` library alone: pad tokens
  carry the label -100 (ignored), every real token is its own label (learnt), every line of
  the file is seen once in the first step, its blank lines dropped. The first logged loss equals the cross-entropy of
  those rows computed here in fp32 from the saved weights (shifted labels, -100 ignored,
  averaged over the tokens of both ranks), within bf16's rounding; the loss then falls.
- ``train_fsdp2.py --model FOLDER`` (its ``from_pretrained`` branch) on 2 ranks, one epoch, from a
  folder saved here (the ``--tiny`` config, read from the snippet's source): the DCP checkpoint
  holds every weight of the folder, each moved by at most what AdamW can move it in that
  epoch, and some moved: it trained the folder's model, not another. The bound: Adam's step is
  at most lr x (1 - beta1) / sqrt(1 - beta2) (Kingma and Ba, arXiv:1412.6980, section 2.1;
  3.16 x lr with PyTorch's default betas 0.9, 0.999), plus the decoupled weight decay lr x
  lambda x |w| (Loshchilov and Hutter, arXiv:1711.05101, Algorithm 2; PyTorch's default
  lambda 0.01); a model of another seed differs from the folder's by far more.

Each run's scripts are sealed and watched (tests/snippets/sealed.py): a reader's path that
read its own file would fail here too.
"""

from __future__ import annotations

import ast
import json
import math
import sys
from pathlib import Path

import pytest

from tests.snippets.hf_checks import LAUNCH_HF, RECORD_HF, Launches, guide_lines
from tests.snippets.launch import PRELOAD_HF, SCRIPT_ZYGOTE, fork_jobs, run
from tests.snippets.sealed import SelfReads, seal

pytestmark = pytest.mark.slow

PROCESSES = 2
SEQ_LEN = 12
STEPS = 3
LINES = [
    "la scheda somma i gradienti",
    "ogni rank vede una fetta diversa dei dati",
    "il modello impara",
    "le etichette dei token di riempimento valgono meno cento",
    "una riga",
    "una riga lunga che supera la lunghezza massima delle sequenze e viene tagliata qui",
    "la perdita scende a ogni passo del trainer",
    "i token veri sono le loro etichette",
]
BF16_TOLERANCE = 0.05  # bf16 keeps 8 significant bits: ~0.4 % of a loss near 3.8 through two layers


def tiny_folder(folder: Path) -> tuple[Path, int]:
    """A tokenizer over the words of ``LINES`` (word level, ``<pad>`` and ``<unk>``) and a
    2-layer Qwen3 of that vocabulary, both saved with ``save_pretrained``; the pad id."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

    words = sorted({word for line in LINES for word in line.split()})
    vocab = {"<pad>": 0, "<unk>": 1, **{word: index + 2 for index, word in enumerate(words)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>").save_pretrained(folder)
    config = AutoConfig.for_model(
        "qwen3",
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        pad_token_id=0,
    )
    torch.manual_seed(1)
    AutoModelForCausalLM.from_config(config, dtype=torch.float32).save_pretrained(folder)
    return folder, vocab["<pad>"]


def expected_rows(folder: Path) -> list[dict]:
    """Each line as input_ids / attention_mask / labels, from the saved tokenizer.json through
    the tokenizers library (not transformers), padded on the right to SEQ_LEN by hand."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    pad = tokenizer.token_to_id("<pad>")
    rows = []
    for line in LINES:
        ids = tokenizer.encode(line).ids[:SEQ_LEN]
        padding = SEQ_LEN - len(ids)
        rows.append(
            {
                "input_ids": ids + [pad] * padding,
                "attention_mask": [1] * len(ids) + [0] * padding,
                "labels": ids + [-100] * padding,
            }
        )
    return rows


def reference_loss(folder: Path, rows: list[dict]) -> float:
    """Cross-entropy of the next token over every labelled position of ``rows``, in fp32,
    from the saved weights: the mean over all tokens of the step (the Trainer averages the
    tokens across ranks, ``average_tokens_across_devices``)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for row in rows:
            ids = torch.tensor([row["input_ids"]])
            logits = model(input_ids=ids, attention_mask=torch.tensor([row["attention_mask"]])).logits[0, :-1]
            labels = torch.tensor(row["labels"][1:])
            keep = labels != -100
            total += torch.nn.functional.cross_entropy(logits[keep], labels[keep], reduction="sum").item()
            count += int(keep.sum())
    return total / count


@pytest.fixture(scope="module")
def reader_hf(extracted, tmp_path_factory, zygote):
    root = tmp_path_factory.mktemp("reader-hf")
    folder, pad = tiny_folder(root / "model")
    data = root / "train.txt"
    # blank and blank-looking lines, which the script drops: the rows are LINES alone
    data.write_text("\n".join(LINES[:3]) + "\n\n  \n" + "\n".join(LINES[3:]) + "\n", encoding="utf-8")
    args = [
        "--model",
        str(folder),
        "--data",
        str(data),
        "--seq_len",
        str(SEQ_LEN),
        "--max_steps",
        str(STEPS),
        "--logging_steps",
        "1",
        "--learning_rate",
        "1e-2",
    ]
    launches = Launches(extracted, root, worker=(SCRIPT_ZYGOTE, "worker", RECORD_HF), script_args=args)
    words = guide_lines()["DDP"]
    job = launches.job("READER", words, PROCESSES)
    assert "--tiny" not in job["args"] and words[:2] == ["accelerate", "launch"]
    (root / "jobs.json").write_text(json.dumps([job]), encoding="utf-8")
    script = extracted / "train_hf.py"
    sealed = seal([script], root / "sealed")
    env = {"HF_HOME": str(root / "hf-home"), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **sealed}
    with SelfReads([script]) as reads:
        done = run(
            [sys.executable, str(SCRIPT_ZYGOTE), "worker", str(LAUNCH_HF), str(root / "jobs.json")],
            {**env, **zygote},
            1200,
            root,
        )
    assert done.returncode == 0 and json.loads(done.stdout.splitlines()[-1]) == {"READER": 0}, launches.log("READER")[
        -3000:
    ]
    return {"ranks": launches.records("READER"), "folder": folder, "pad": pad, "self_reads": reads.opened()}


def test_the_readers_text_is_padded_and_only_real_tokens_are_labels(reader_hf):
    ranks, pad = reader_hf["ranks"], reader_hf["pad"]
    assert [rank["world_size"] for rank in ranks] == [PROCESSES] * PROCESSES
    seen = []
    for rank in ranks:
        batch = rank["first_batch"]
        for ids, mask, labels in zip(batch["input_ids"], batch["attention_mask"], batch["labels"]):
            seen.append({"input_ids": ids, "attention_mask": mask, "labels": labels})
            for token, kept, label in zip(ids, mask, labels):
                assert label == (token if kept else -100)  # pad ignored, every real token learnt
                assert kept or token == pad
    expected = expected_rows(reader_hf["folder"])
    # rows padded, and one line cut at --seq_len (truncation=True)
    assert any(0 in row["attention_mask"] for row in expected) and any(
        0 not in row["attention_mask"] for row in expected
    )
    key = lambda row: json.dumps(row, sort_keys=True)  # noqa: E731
    assert sorted(map(key, seen)) == sorted(map(key, expected)), "each line of the file once in the first step"
    assert reader_hf["self_reads"] == []


def test_the_first_loss_is_the_cross_entropy_of_the_real_tokens_and_it_falls(reader_hf):
    losses = reader_hf["ranks"][0]["losses"]
    assert all(rank["losses"] == losses for rank in reader_hf["ranks"]) and len(losses) == STEPS
    reference = reference_loss(reader_hf["folder"], expected_rows(reader_hf["folder"]))
    assert math.log(len(LINES)) < reference  # an untrained model: about ln(vocabulary)
    assert losses[0] == pytest.approx(reference, abs=BF16_TOLERANCE)
    assert losses[-1] < losses[0] - 5 * BF16_TOLERANCE


def call_of(script: Path, name: str) -> ast.Call:
    """The one call of ``name`` (a function or method name) in ``script``'s source."""
    calls = [
        node
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and name in (getattr(node.func, "attr", None), getattr(node.func, "id", None))
    ]
    assert len(calls) == 1, f"{script.name}: {len(calls)} calls of {name}"
    return calls[0]


def keyword(call: ast.Call, name: str):
    (value,) = [keyword.value for keyword in call.keywords if keyword.arg == name]
    return ast.literal_eval(value)


def tiny_config_of(script: Path) -> dict:
    """The keyword arguments of the snippet's ``AutoConfig.for_model("qwen3", ...)`` (its ``--tiny`` model)."""
    call = call_of(script, "for_model")
    return {
        "model_type": ast.literal_eval(call.args[0]),
        **{kw.arg: ast.literal_eval(kw.value) for kw in call.keywords},
    }


@pytest.fixture(scope="module")
def reader_fsdp2(extracted, tmp_path_factory, zygote):
    """``train_fsdp2.py --model FOLDER --epochs 1`` on 2 ranks."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    root = tmp_path_factory.mktemp("reader-fsdp2")
    script = extracted / "train_fsdp2.py"
    kwargs = tiny_config_of(script)
    config = AutoConfig.for_model(kwargs.pop("model_type"), **kwargs)
    torch.manual_seed(2)
    AutoModelForCausalLM.from_config(config, dtype=torch.float32).save_pretrained(root / "model")
    (root / "reader").mkdir()
    jobs = [(root / "reader", PROCESSES, script, ["--model", str(root / "model"), "--epochs", "1", "--out", "out"])]
    sealed = seal([script], root / "sealed")
    with SelfReads([script]) as reads:
        (done,) = fork_jobs(jobs, root, preload=PRELOAD_HF, zygote=zygote, env={"HF_HUB_OFFLINE": "1", **sealed})
    return {"root": root, "done": done, "script": script, "self_reads": reads.opened()}


def test_train_fsdp2_trains_the_folders_model(reader_fsdp2):
    import torch
    from safetensors.torch import load_file
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    done, root, script = reader_fsdp2["done"], reader_fsdp2["root"], reader_fsdp2["script"]
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("epoch 0: loss ")
    dcp_to_torch_save(root / "reader" / "out" / "epoch-1" / "model", root / "trained.pt")
    trained = torch.load(root / "trained.pt", weights_only=False)
    saved = load_file(root / "model" / "model.safetensors")
    # the epoch's steps: the data's rows over world size x batch size, as the script sets them
    rows = ast.literal_eval(call_of(script, "randint").args[2])[0]
    steps = math.ceil(rows / (PROCESSES * keyword(call_of(script, "DataLoader"), "batch_size")))
    adamw = call_of(script, "AdamW")
    lr, decay, (beta1, beta2) = keyword(adamw, "lr"), 0.01, (0.9, 0.999)  # torch.optim.AdamW's defaults
    step = lr * max(1.0, (1 - beta1) / math.sqrt(1 - beta2))
    assert set(saved) <= set(trained) and saved
    moved = 0.0
    for name, before in saved.items():
        change = (trained[name] - before).abs()
        assert change.max().item() <= steps * (step + lr * decay * before.abs().max().item()) * 1.001, name
        moved = max(moved, change.max().item())
    assert moved > 0, "the model trained"
    assert reader_fsdp2["self_reads"] == []


def test_dcp_to_hf_refuses_a_config_whose_names_are_not_the_checkpoints(reader_fsdp2, tmp_path):
    """The converter's own check (a reader's config.json from another model): one line, the names."""
    import shutil

    from tests.snippets.hf_checks import argv
    from tests.snippets.sealed import run_as_main

    checkpoint = tmp_path / "epoch-1"
    shutil.copytree(reader_fsdp2["root"] / "reader" / "out" / "epoch-1", checkpoint)
    config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    config["num_hidden_layers"] -= 1  # a model with one block less: its names are a subset
    config["layer_types"] = config["layer_types"][:-1]
    (checkpoint / "config.json").write_text(json.dumps(config), encoding="utf-8")
    script = str(reader_fsdp2["script"].parent / "dcp_to_hf.py")
    with argv([script]), pytest.raises(SystemExit) as stopped:
        run_as_main(script, [str(checkpoint), str(tmp_path / "out")], watch=False)
    last = config["num_hidden_layers"]
    assert str(stopped.value.code).startswith("names differ: [") and f"model.layers.{last}." in str(stopped.value.code)
    assert not (tmp_path / "out").exists()
