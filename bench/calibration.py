"""How good the time estimates are: every published run of snippets/data/measurements.yaml
predicted by a calibration that never saw its source (vram.calibration.leave_one_source_out),
coverage and median width per group, against the targets (coverage >= 80 % with a median
width <= 1.5x). Figures, not a gate: the dataset decides them, and ``make bench`` reports them
without failing on them.

    python -m bench.calibration   # these rows alone, also written into bench/results.md
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.common import render  # noqa: E402
from vram.calibration import (  # noqa: E402
    COVERAGE_TARGET,
    RULE,
    RULES,
    WIDTH_TARGET,
    Rule,
    load_measured_data,
    validation_figures,
)

LABELS = {
    "training": "Time estimates against published training runs on one machine, leave-one-source-out",
    "serving": "Decoding range against published decoding runs by server engines (vLLM, TensorRT-LLM, LMDeploy), "
    "leave-one-source-out",
    "serving_local": "Decoding range against published decoding runs by local engines (llama.cpp, MLC, ExLlamaV2), "
    "leave-one-source-out",
    "scale": "Scale checks: runs over several machines, predicted with the one-machine model",
    "holdout": "Sources collected after the rule was frozen (held out, never calibrated on)",
}
SECTION = "## Time estimates against published runs"
# Every figure the validation gave before the rows above, in order (the rows are recomputed on
# each run; this is the record of what was tried): dataset, rule, training / decoding / scale.
HISTORY = """History (leave-one-source-out; training on one machine / decoding / scale checks):

- main at 90232d7, 68 runs from 10 sources, rule R0: 66%, 1.65x (35 runs) / 29%, 1.32x (14) / 88%, 1.72x (16).
- i31b at 08ade74, the same runs after the audit (4 entries fixed), rule R0: 66%, 1.66x / 29%, 1.32x / 81%, 1.72x;
  rule R1 on that data (computed afterwards, for this record): 80%, 1.71x / 29%, 1.06x / 81%, 1.57x.
- i31b at c9c4617, 99 runs from 11 sources, rule R0: 61%, 1.49x (51) / 72%, 2.51x (29) / 75%, 1.68x (16).
- i31b at aa43d71, R1 committed before any of its figures was computed; its first figures, on the 99 runs:
  75%, 1.72x / 86%, 3.81x / 81%, 1.57x.
- i31b at fac8572, the CPU's Adam step under offload added to the time model (the rules unchanged): R1 82%, 1.65x /
  86%, 3.81x / 75%, 1.49x; R0 61%, 1.49x / 72%, 2.51x / 75%, 1.68x. No other rule was tried.
- i31c at 9f4fc2b, 126 runs from 13 sources (27 more decoding runs by server engines: TensorRT-LLM v0.6.1's other
  rows, LMDeploy on A100, vLLM's CI on H200); decoding now split into server engines (34 runs) and local engines
  (22). i31c at 091d827: rule R2 committed before any figure on these runs was computed (R0's and R1's included).
  First figures, training / decoding by servers / decoding by local engines / scale, every decoding run together:
  R2 82%, 1.65x / 76%, 2.85x / 68%, 1.79x / 75%, 1.49x; every decoding run 73%, 2.12x (56).
  R1 82%, 1.65x / 82%, 3.34x / 86%, 2.96x / 75%, 1.49x; every decoding run 84%, 3.34x.
  R0 59%, 1.44x / 68%, 3.84x / 59%, 2.32x / 75%, 1.55x; every decoding run 64%, 3.84x.
  No other rule was tried; training keeps R1's rule (R2 is R1 there), so its figures did not move.
- holdout at b9c92ab, an out-of-sample check of R2 as frozen at 091d827 (bench/holdout.py): 15 training runs of 3
  sources collected afterwards (universal-llm-trainer, torchao on B200, NVIDIA dgxc-benchmarking HF PEFT + FSDP),
  predicted from a calibration of the 13 old sources only. R2 0%, 1.55x (13 runs on one machine) / scale 0%, 1.54x
  (2). Every run is slower than its range's low end (measured / low: 0.13 to 0.72, median 0.52; QLoRA 0.13 to 0.19).
  No rule, class or time-model code was changed after this figure.
- holdout, the 3 sources joined to the data: 141 runs from 16 sources. Leave-one-source-out, training on one machine /
  decoding by servers / decoding by local engines / scale: R2 73%, 6.92x (64 runs) / 76%, 2.85x / 68%, 1.79x /
  89%, 4.35x (18); R1 the same but decoding 82%, 3.34x / 86%, 2.96x; R0 44%, 1.95x / 68%, 3.80x / 55%, 2.32x /
  72%, 2.00x. The training dispersion (80th percentile of each run against the other sources' centre) goes from 1.23
  to 3.01: the new sources' runs sit up to 10 times below the other sources' class centres (QLoRA on A100 and RTX PRO 6000
  the farthest), and the old A100 QLoRA runs as far from them.
  Reverted (the next entry): the new sources are a held-out validation set, not calibration data; the rule stays
  calibrated on the sources it was written and validated on (this joining also failed the floor test, 6.92x > 2.0).
- holdout, the 3 sources a held-out validation set instead: each carries `holdout` in measurements.yaml, its runs
  are predicted from the calibration of the 13 other sources and never calibrated on (vram.calibration.group_of:
  their own group, "holdout"; bench/holdout.py removed, the group says the same). Training on one machine /
  decoding by servers / decoding by local engines / scale are back to 091d827's figures for every rule (R2 82%,
  1.65x (51) / 76%, 2.85x / 68%, 1.79x / 75%, 1.49x (16)). Held out (15 runs: 13 on one machine, 2 scale checks):
  R2 0%, 1.55x; R1 0%, 1.55x; R0 13%, 1.80x. Under R2 every run is slower than its range's low end (measured /
  low 0.13 to 0.72).
- holdout2, 2 more held-out sources, both tuned stacks in their own configurations (Transformer Engine, flash
  attention, distributed optimizer): NVIDIA dgxc-benchmarking v24.11.1's NeMo 24.09 Llama 3.1 8B BF16 recipe on
  DGX H100 (8 GPUs, and 16 as a scale check) and BAAI FlagPerf's Megatron-LM (core_v0.6.0) Llama 3 8B on H100 (8,
  and 16 as a scale check). The other groups unchanged. Held out, before / after (15 / 19 runs): R2 0%, 1.55x /
  0%, 1.62x; R1 the same; R0 13%, 1.80x / 11%, 1.74x. Under R2 the 4 new runs are faster than their range's high
  end (measured / high: NeMo 1.33 and 1.32 on 16, Megatron-LM 1.06 and 1.04 on 16; measured / low 2.16, 2.15,
  1.72, 1.69), the 15 earlier ones still slower than its low end: a tuned loop is no guarantee of falling inside
  (torchtitan on power-limited B200 below, NeMo and Megatron-LM on H100 above). No rule, constant or time-model
  code was changed.
- main at 05f7f82, rule R3 committed before any of its figures was computed, as the site's next rule: R2 with a
  training class that also has its model code (transformers' modeling code, as this guide's scripts, or the
  framework's own; read at each source's commit, measurements.yaml's header), and the five sources collected
  after R2 was frozen read by R3 (collected_after: R2; still held out from R0 to R2). Its first figures, training
  on one machine / decoding by servers / by local engines / scale: R3 70%, 13.94x (66 runs) / 76%, 2.85x /
  68%, 1.79x / 100%, 14.78x (20). The training dispersion is 9.32 (R2: 1.23 without those sources): the
  transformers-code sources disagree with each other as much as with the others (class A100, dense, QLoRA,
  transformers code: 0.06 of the peak for universal-llm-trainer, 0.45 to 0.59 for Answer.AI), and vectorlm's
  transformers-code runs on A100 reach 0.79 of the peak, more than any own-code run on one machine (0.72): the
  model code does not order the runs. The switch to R3 its commit promised was not made (a range 14 times wide is
  no answer); the site keeps R2, whose held-out failure its pages state. No other rule was tried.
- main at 5d37574, a third round of sources, collected by two helpers started as R3 was committed and merged
  after it, none of their figures computed before (collected_after: R3, so held out from every rule, R3 included):
  IBM fms-acceleration's fms-hf-tuning baselines on A100 (13 runs), Hugging Face optimum-benchmark's training-llamas
  reports of December and August 2023 (15 and 4), torchao float8's bf16 torchtitan baseline on 8 H100 (1),
  OLMo-core's official scripts on 8 H100 (2), torchtune's optimization-flags table on one A100 (5); an audit
  against the sources fixed one field (torchtune's full rows train all in bf16: adamw-bf16) before any figure.
  On these 40 runs: R2 50%, 1.50x (20 inside; 18 slower than the low end, 0.49 to 0.98 of it: 16 optimum-benchmark
  runs of 256-token samples, one fms-acceleration, one torchtune; 2 faster, OLMo-core, 1.08 and 1.11 of the high
  end); IBM's fms-acceleration, Hugging Face's Trainer on packed 4,096-token sequences, 12 of 13 inside. R3 100%,
  15.92x. Both rounds together (59 runs): R2 34%, 1.50x; R1 the same; R0 36%, 1.73x. No rule was changed.
"""


def figures(rule: Rule = RULE) -> dict:
    """The validation figures per group (``vram.calibration.Figures``) under ``rule``."""
    measured = load_measured_data()
    return validation_figures(measured.checks(rule), measured.measurements)


def rows(found: dict[str, dict] | None = None) -> list[tuple[str, str, str, str]]:
    """Table rows like bench/run.py's: (measure, figure, target, verdict: "met" or "missed"),
    for every rule of ``vram.calibration.RULES`` (the site's is ``RULE``)."""
    found = {rule.name: figures(rule) for rule in RULES} if found is None else found
    target = f">= {COVERAGE_TARGET:.0%} with <= {WIDTH_TARGET}x"
    return [
        (
            (
                f"{LABELS[group]} ({f.runs} runs), rule {name}{' (the site)' if name == RULE.name else ''}: "
                "coverage, median width (high / low)"
            ),
            f"{f.coverage:.0%}, {f.median_width:.2f}x",
            target,
            "met" if f.meets_targets else "missed",
        )
        for name, by_group in found.items()
        for group, f in by_group.items()
    ]


def write_section(path: Path, table: str) -> None:
    """Put ``table`` under ``SECTION`` in ``path`` (replacing what was there)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else "# Performance budget\n"
    block = (
        f"{SECTION}\n\n`python -m bench.calibration` (also printed by `make bench`). Not a gate: the targets "
        "are the issue's, the figures what the published measurements give. Rule R0 is the first "
        "calibration (lowest to highest share per class, one-source classes widened); R1 (the source median "
        "x/÷ the dispersion of sources, compute-bound training runs only), R2, the site's (R1, and for "
        "decoding only server engines' runs, tensor parallel runs a regime of their own), and R3 (R2 with the "
        "model's code, transformers or the framework's own, in the training class; not the site's: see the "
        "history) were each written down and committed before they were validated (vram/calibration.py).\n\n"
        + table
        + "\n\n"
        + HISTORY
    )
    if SECTION in text:
        text = re.sub(rf"{re.escape(SECTION)}\n.*?(?=\n## |\Z)", block.rstrip("\n") + "\n", text, flags=re.DOTALL)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text, encoding="utf-8")


def main() -> int:
    found = rows()
    print(render(found, markdown=False))
    write_section(REPO / "bench" / "results.md", render(found, markdown=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
