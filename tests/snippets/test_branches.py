"""Every branch of every bound block, and the test that runs it (issue 33, hole 2).

The GPU record binds the hash of every block the pages present (``verify.record.BLOCKS``), so
every path a reader can take through one of its Python scripts must run somewhere: a CPU
rehearsal of this suite, or a ``gpu`` test of the GPU job. ``train_hf.py``'s ``else:`` (the
reader's model, tokenizer, data file and label mask) ran nowhere, and a change there (every
real token masked, an ``os.system`` line) published.

``BRANCHES`` lists, for each Python block, each arm of each ``if``/``... if ... else ...``
(true and false, the false arm being the skipped body when there is no ``else``), each loop
body, each ``except`` and each ``case``, as Python's AST reads the snippet, with the test that
runs it (a comprehension's filter and ``and``/``or`` are conditions inside one statement, not
arms here). A
new branch, or a branch changed, without its line here fails; so does a line naming a test
that does not exist. Which arm a named test takes is what its module's docstring and asserts
say (a ``gpu`` test runs on the GPU job: ``acc`` is true only there).
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from tests.conftest import REPO_ROOT
from verify.readers import language_of
from verify.record import BLOCKS

SNIPPETS = REPO_ROOT / "snippets"
NCCL = "tests/snippets/test_nccl_check_rehearsal.py::"
TRAIN = "tests/snippets/test_train_rehearsal.py::"
FSDP = "tests/snippets/test_fsdp2_rehearsal.py::"
HF = "tests/snippets/test_hf_rehearsal.py::"
READER = "tests/snippets/test_reader_paths.py::"
GPU = "tests/gpu/test_on_gpu.py::"
GPU_SCRIPTS = "tests/gpu/test_guide_scripts_on_gpu.py::"

NCCL_RUNS = NCCL + "test_rehearsal_passes_with_one_intact_line_per_rank"
NCCL_GPU = GPU + "test_nccl_check_on_every_gpu"
TRAIN_RUNS = TRAIN + "test_ranks_see_disjoint_samples_and_end_with_identical_weights"
TRAIN_GROUPS = TRAIN + "test_last_shorter_group_weighs_every_micro_batch_the_same"
TRAIN_GPU = GPU + "test_train_on_every_gpu_ends_with_identical_weights"
FSDP_RUNS = FSDP + "test_every_block_and_the_root_are_sharded_and_kept_in_fp32"
FSDP_GPU = GPU_SCRIPTS + "test_fsdp2_script_on_every_gpu_reports_its_peak_and_resumes"
HF_RUNS = HF + "test_two_processes_see_world_size_two"
ZERO_TO_HF = HF + "test_zero3_checkpoint_becomes_a_folder_from_pretrained_loads"
DCP_TO_HF = FSDP + "test_dcp_to_hf_gives_a_folder_from_pretrained_loads_with_the_trained_logits"

BRANCHES = {
    ("nccl_check.py", "if 'LOCAL_RANK' not in os.environ: false"): NCCL_RUNS,
    ("nccl_check.py", "if 'LOCAL_RANK' not in os.environ: true"): NCCL + "test_started_with_plain_python_it_says_how_to_launch",
    ("nccl_check.py", "if free_shm_mb < min_shm_mb and os.environ.get('NCCL_SHM_DISABLE') != '1': false"): NCCL_RUNS,
    ("nccl_check.py", "if free_shm_mb < min_shm_mb and os.environ.get('NCCL_SHM_DISABLE') != '1': true"):
        NCCL + "test_small_dev_shm_fails_fast_naming_it_and_the_fix",
    ("nccl_check.py", "if acc is None and os.environ.get('NCCL_CHECK_ALLOW_CPU') != '1': false"): NCCL_RUNS,
    ("nccl_check.py", "if acc is None and os.environ.get('NCCL_CHECK_ALLOW_CPU') != '1': true"):
        NCCL + "test_without_a_gpu_it_refuses_unless_the_cpu_rehearsal_is_asked_for",
    ("nccl_check.py", "if acc is None: false"): NCCL_GPU,
    ("nccl_check.py", "if acc is None: true"): NCCL_RUNS,
    ("nccl_check.py", "if acc is not None: false"): NCCL_RUNS,
    ("nccl_check.py", "if acc is not None: true"): NCCL_GPU,
    ("nccl_check.py", "if expected > 2 ** 24: false"): NCCL_RUNS,
    ("nccl_check.py", "if expected > 2 ** 24: true"): NCCL + "test_past_the_exact_limit_it_refuses_with_one_line",
    ("nccl_check.py", "if not torch.all(x == expected): false"): NCCL_RUNS,
    ("nccl_check.py", "if not torch.all(x == expected): true"): NCCL + "test_a_wrong_sum_fails_loudly_on_every_rank",
    ("nccl_check.py", "loop range(3): body"): NCCL_RUNS,
    ("nccl_check.py", "loop range(10): body"): NCCL_RUNS,
    ("nccl_check.py", "except RuntimeError: runs"): NCCL + "test_a_rank_that_never_joins_becomes_an_error_naming_the_collective",
    ("nccl_check.py", "if n > 1: false"): NCCL + "test_one_rank_claims_no_bus_bandwidth",
    ("nccl_check.py", "if n > 1: true"): NCCL_RUNS,
    ("train.py", "if 'LOCAL_RANK' not in os.environ: false"): TRAIN_RUNS,
    ("train.py", "if 'LOCAL_RANK' not in os.environ: true"): TRAIN + "test_started_with_plain_python_it_says_how_to_launch",
    ("train.py", "ifexp acc: false"): TRAIN_RUNS,
    ("train.py", "ifexp acc: true"): TRAIN_GPU,
    ("train.py", "if acc: false"): TRAIN_RUNS,
    ("train.py", "if acc: true"): TRAIN_GPU,
    ("train.py", "ifexp acc: false #2"): TRAIN_RUNS,
    ("train.py", "ifexp acc: true #2"): TRAIN_GPU,
    ("train.py", "loop range(args.epochs): body"): TRAIN_RUNS,
    ("train.py", "loop enumerate(loader, start=1): body"): TRAIN_RUNS,
    ("train.py", "ifexp last: false"): TRAIN_GROUPS,
    ("train.py", "ifexp last: true"): TRAIN_GROUPS,
    ("train.py", "if last: false"): TRAIN_GROUPS,
    ("train.py", "if last: true"): TRAIN_GROUPS,
    ("train.py", "if rank == 0: false"): TRAIN_RUNS,  # two ranks: rank 1 skips it
    ("train.py", "if rank == 0: true"): TRAIN_RUNS,
    ("train_fsdp2.py", "if 'LOCAL_RANK' not in os.environ: false"): FSDP_RUNS,
    ("train_fsdp2.py", "if 'LOCAL_RANK' not in os.environ: true"): FSDP + "test_started_with_plain_python_it_says_how_to_launch",
    ("train_fsdp2.py", "ifexp acc: false"): FSDP_RUNS,
    ("train_fsdp2.py", "ifexp acc: true"): FSDP_GPU,
    ("train_fsdp2.py", "if acc: false"): FSDP_RUNS,
    ("train_fsdp2.py", "if acc: true"): FSDP_GPU,
    ("train_fsdp2.py", "if args.tiny: false"): READER + "test_train_fsdp2_trains_the_folders_model",
    ("train_fsdp2.py", "if args.tiny: true"): FSDP_RUNS,
    ("train_fsdp2.py", "if nodes > 1: false"): FSDP_RUNS,
    ("train_fsdp2.py", "if nodes > 1: true"): "tests/snippets/test_two_machines.py::test_two_machines_make_one_world_of_four_with_hsdp",
    ("train_fsdp2.py", "loop model.model.layers: body"): FSDP_RUNS,
    ("train_fsdp2.py", "if rank == 0: false"): FSDP_RUNS,
    ("train_fsdp2.py", "if rank == 0: true"): FSDP_RUNS,
    ("train_fsdp2.py", "if done: false"): FSDP_RUNS,
    ("train_fsdp2.py", "if done: true"): FSDP + "test_the_resumed_run_starts_from_the_checkpoint",
    ("train_fsdp2.py", "if rank == 0: false #2"): FSDP + "test_the_resumed_run_starts_from_the_checkpoint",
    ("train_fsdp2.py", "if rank == 0: true #2"): FSDP + "test_the_resumed_run_starts_from_the_checkpoint",
    ("train_fsdp2.py", "loop range(start, args.epochs): body"): FSDP_RUNS,
    ("train_fsdp2.py", "loop enumerate(loader): body"): FSDP_RUNS,
    ("train_fsdp2.py", "if acc and epoch == start and (step == 0): false"): FSDP_RUNS,
    ("train_fsdp2.py", "if acc and epoch == start and (step == 0): true"): FSDP_GPU,
    ("train_fsdp2.py", "if rank == 0: false #3"): FSDP_RUNS,
    ("train_fsdp2.py", "if rank == 0: true #3"): FSDP_RUNS,
    ("train_hf.py", "if script.tiny: false"): READER + "test_the_readers_text_is_padded_and_only_real_tokens_are_labels",
    ("train_hf.py", "if script.tiny: true"): HF_RUNS,
    ("train_hf.py", "if script.lora: false"): HF_RUNS,
    ("train_hf.py", "if script.lora: true"): HF + "test_lora_trains_only_the_adapters",
    ("train_hf.py", "if trainer.is_world_process_zero(): false"): HF_RUNS,
    ("train_hf.py", "if trainer.is_world_process_zero(): true"): HF_RUNS,
    ("zero_to_hf.py", "ifexp args.dtype == 'bf16': false"): ZERO_TO_HF,  # --dtype fp32
    ("zero_to_hf.py", "ifexp args.dtype == 'bf16': true"): ZERO_TO_HF,
    ("zero_to_hf.py", "loop Path(args.checkpoint).glob('tokenizer*'): body"): ZERO_TO_HF,  # a tokenizer file copied
    ("dcp_to_hf.py", "if set(saved) != set(state): false"): DCP_TO_HF,
    ("dcp_to_hf.py", "if set(saved) != set(state): true"): READER + "test_dcp_to_hf_refuses_a_config_whose_names_are_not_the_checkpoints",
    ("dcp_to_hf.py", "ifexp args.dtype == 'bf16': false"): DCP_TO_HF,
    ("dcp_to_hf.py", "ifexp args.dtype == 'bf16': true"): DCP_TO_HF,
}


def arms(source: str) -> list[str]:
    """Every arm of ``source``'s branches, in source order: ``if COND: true|false``, ``ifexp
    COND: true|false``, ``loop ITER: body``, ``except TYPE: runs``; a repeated one gets ``#n``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        where = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if isinstance(node, (ast.If, ast.IfExp)):
            kind = "if" if isinstance(node, ast.If) else "ifexp"
            found += [(where, f"{kind} {ast.unparse(node.test)}: {arm}") for arm in ("true", "false")]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            found.append((where, f"loop {ast.unparse(node.test if isinstance(node, ast.While) else node.iter)}: body"))
        elif isinstance(node, ast.Try):
            found += [((handler.lineno, handler.col_offset), f"except {ast.unparse(handler.type) if handler.type else ''}: runs")
                      for handler in node.handlers]
        elif isinstance(node, ast.Match):
            found += [(where, f"case {ast.unparse(case.pattern)}: runs") for case in node.cases]
    counted: Counter[str] = Counter()
    named = []
    for _, arm in sorted(found):
        counted[arm] += 1
        named.append(arm if counted[arm] == 1 else f"{arm} #{counted[arm]}")
    return named


def python_blocks() -> dict[str, Path]:
    """Each bound Python block (``verify.record.BLOCKS``) and its one file of ``snippets/``."""
    found = {}
    for title in BLOCKS:
        if language_of(title) == "python":
            (path,) = [path for path in SNIPPETS.rglob(title) if path.is_file()]
            found[title] = path
    return found


def test_every_branch_of_every_bound_block_has_the_test_that_runs_it():
    blocks = python_blocks()
    assert {"train_hf.py", "train_fsdp2.py", "nccl_check.py"} <= set(blocks)
    listed = {}
    for (title, arm), test in BRANCHES.items():
        listed.setdefault(title, set()).add(arm)
    assert set(listed) == set(blocks), "a bound Python block without its branches listed, or a block no longer bound"
    for title, path in blocks.items():
        found = arms(path.read_text(encoding="utf-8"))
        assert len(found) == len(set(found))
        missing, gone = sorted(set(found) - listed[title]), sorted(listed[title] - set(found))
        assert not missing, f"{title}: branches without the test that runs them (add them to BRANCHES): {missing}"
        assert not gone, f"{title}: BRANCHES lists branches the snippet no longer has: {gone}"


def test_every_test_named_exists():
    defined: dict[str, set[str]] = {}
    for test in set(BRANCHES.values()):
        module, name = test.split("::")
        if module not in defined:
            tree = ast.parse((REPO_ROOT / module).read_text(encoding="utf-8"))
            defined[module] = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert name in defined[module] and name.startswith("test_"), test


def test_the_arms_are_read_from_the_code_not_its_comments():
    """A comment cannot add or hide a branch: the listing is Python's AST."""
    assert arms("if a:  # b\n    x = 1\n# if c:\n") == ["if a: false", "if a: true"]
    assert arms("for i in r:\n    pass\ntry:\n    f()\nexcept ValueError:\n    pass\nx = 1 if a else 2\n") == [
        "loop r: body", "except ValueError: runs", "ifexp a: false", "ifexp a: true"]
