"""Every branch arm of every bound Python block, and the test that runs it (issue 33, hole 2).

The GPU record binds the hash of every block the pages present (``verify.record.BLOCKS``), so
every path a reader can take through one of its Python scripts must run somewhere: a CPU
rehearsal of this suite, or a ``gpu`` test of the GPU job. ``BRANCHES`` names, for each arm
``tests/snippets/arms.py`` reads from a block's AST (``if`` and conditional expressions true and
false, ``and``/``or`` operands evaluated and skipped, comprehension filters, loop bodies,
``except`` handlers, ``case``s, function and lambda bodies), the test whose runs take it. That
the named test's runs really take it is measured, not trusted: the loader traces each
rehearsed run (``tests/snippets/sealed.py``) and the session's check (``tests/conftest.py``)
fails naming the block, the line and the arm when no run of the named test's module took it.

**GPU-only arms** are the arms whose test is a ``gpu`` test (``tests/gpu/``): the ones where
``acc`` (``torch.accelerator.current_accelerator()``) is not None. The CPU suite skips them;
``REQUIRE_GPU=1`` (the GPU job's ``pytest -m gpu``) makes them required there.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.snippets.arms import GPU_TESTS, untaken
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
FSDP_RESUMED = FSDP + "test_the_resumed_run_starts_from_the_checkpoint"
FSDP_GPU = GPU_SCRIPTS + "test_fsdp2_script_on_every_gpu_reports_its_peak_and_resumes"
HF_RUNS = HF + "test_two_processes_see_world_size_two"
READER_HF = READER + "test_the_readers_text_is_padded_and_only_real_tokens_are_labels"
ZERO_TO_HF = HF + "test_zero3_checkpoint_becomes_a_folder_from_pretrained_loads"
DCP_TO_HF = FSDP + "test_dcp_to_hf_gives_a_folder_from_pretrained_loads_with_the_trained_logits"

BRANCHES = {
    ("nccl_check.py", "if 'LOCAL_RANK' not in os.environ: false"): NCCL_RUNS,
    ("nccl_check.py", "if 'LOCAL_RANK' not in os.environ: true"): NCCL
    + "test_started_with_plain_python_it_says_how_to_launch",
    ("nccl_check.py", "and os.environ.get('NCCL_SHM_DISABLE') != '1': evaluated"): NCCL
    + "test_small_dev_shm_fails_fast_naming_it_and_the_fix",
    ("nccl_check.py", "and os.environ.get('NCCL_SHM_DISABLE') != '1': skipped"): NCCL_RUNS,
    ("nccl_check.py", "if free_shm_mb < min_shm_mb and os.environ.get('NCCL_SHM_DISABLE') != '1': false"): NCCL_RUNS,
    ("nccl_check.py", "if free_shm_mb < min_shm_mb and os.environ.get('NCCL_SHM_DISABLE') != '1': true"): NCCL
    + "test_small_dev_shm_fails_fast_naming_it_and_the_fix",
    ("nccl_check.py", "and os.environ.get('NCCL_CHECK_ALLOW_CPU') != '1': evaluated"): NCCL_RUNS,
    ("nccl_check.py", "and os.environ.get('NCCL_CHECK_ALLOW_CPU') != '1': skipped"): NCCL_GPU,
    ("nccl_check.py", "if acc is None and os.environ.get('NCCL_CHECK_ALLOW_CPU') != '1': false"): NCCL_RUNS,
    ("nccl_check.py", "if acc is None and os.environ.get('NCCL_CHECK_ALLOW_CPU') != '1': true"): NCCL
    + "test_without_a_gpu_it_refuses_unless_the_cpu_rehearsal_is_asked_for",
    ("nccl_check.py", "if acc is None: false"): NCCL_GPU,
    ("nccl_check.py", "if acc is None: true"): NCCL_RUNS,
    ("nccl_check.py", "def sync: runs"): NCCL_RUNS,
    ("nccl_check.py", "if acc is not None: false"): NCCL_RUNS,
    ("nccl_check.py", "if acc is not None: true"): NCCL_GPU,
    ("nccl_check.py", "if expected > 2 ** 24: false"): NCCL_RUNS,
    ("nccl_check.py", "if expected > 2 ** 24: true"): NCCL + "test_past_the_exact_limit_it_refuses_with_one_line",
    ("nccl_check.py", "if not torch.all(x == expected): false"): NCCL_RUNS,
    ("nccl_check.py", "if not torch.all(x == expected): true"): NCCL + "test_a_wrong_sum_fails_loudly_on_every_rank",
    ("nccl_check.py", "loop range(3): body"): NCCL_RUNS,
    ("nccl_check.py", "loop range(10): body"): NCCL_RUNS,
    ("nccl_check.py", "except RuntimeError: runs"): NCCL
    + "test_a_rank_that_never_joins_becomes_an_error_naming_the_collective",
    ("nccl_check.py", "if n > 1: false"): NCCL + "test_one_rank_claims_no_bus_bandwidth",
    ("nccl_check.py", "if n > 1: true"): NCCL_RUNS,
    ("train.py", "if 'LOCAL_RANK' not in os.environ: false"): TRAIN_RUNS,
    ("train.py", "if 'LOCAL_RANK' not in os.environ: true"): TRAIN
    + "test_started_with_plain_python_it_says_how_to_launch",
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
    ("train_fsdp2.py", "if 'LOCAL_RANK' not in os.environ: true"): FSDP
    + "test_started_with_plain_python_it_says_how_to_launch",
    ("train_fsdp2.py", "ifexp acc: false"): FSDP_RUNS,
    ("train_fsdp2.py", "ifexp acc: true"): FSDP_GPU,
    ("train_fsdp2.py", "if acc: false"): FSDP_RUNS,
    ("train_fsdp2.py", "if acc: true"): FSDP_GPU,
    ("train_fsdp2.py", "if args.tiny: false"): READER + "test_train_fsdp2_trains_the_folders_model",
    ("train_fsdp2.py", "if args.tiny: true"): FSDP_RUNS,
    ("train_fsdp2.py", "if nodes > 1: false"): FSDP_RUNS,
    (
        "train_fsdp2.py",
        "if nodes > 1: true",
    ): "tests/snippets/test_two_machines.py::test_two_machines_make_one_world_of_four_with_hsdp",
    ("train_fsdp2.py", "loop model.model.layers: body"): FSDP_RUNS,
    ("train_fsdp2.py", "def load_checkpoint: runs"): FSDP_RESUMED,
    ("train_fsdp2.py", "def save_checkpoint: runs"): FSDP_RUNS,
    ("train_fsdp2.py", "if rank == 0: false"): FSDP_RUNS,
    ("train_fsdp2.py", "if rank == 0: true"): FSDP_RUNS,
    ("train_fsdp2.py", "filter (path / 'optim' / '.metadata').exists(): kept"): FSDP_RESUMED,
    ("train_fsdp2.py", "filter (path / 'optim' / '.metadata').exists(): dropped"): FSDP_RESUMED,  # a save cut short
    ("train_fsdp2.py", "lambda path: runs"): FSDP_RESUMED,
    ("train_fsdp2.py", "if done: false"): FSDP_RUNS,
    ("train_fsdp2.py", "if done: true"): FSDP_RESUMED,
    ("train_fsdp2.py", "if rank == 0: false #2"): FSDP_RESUMED,
    ("train_fsdp2.py", "if rank == 0: true #2"): FSDP_RESUMED,
    ("train_fsdp2.py", "loop range(start, args.epochs): body"): FSDP_RUNS,
    ("train_fsdp2.py", "loop enumerate(loader): body"): FSDP_RUNS,
    ("train_fsdp2.py", "and epoch == start: evaluated"): FSDP_GPU,
    ("train_fsdp2.py", "and epoch == start: skipped"): FSDP_RUNS,
    ("train_fsdp2.py", "and step == 0: evaluated"): FSDP_GPU,
    ("train_fsdp2.py", "and step == 0: skipped"): FSDP_GPU,  # the second epoch: epoch != start
    ("train_fsdp2.py", "if acc and epoch == start and (step == 0): false"): FSDP_RUNS,
    ("train_fsdp2.py", "if acc and epoch == start and (step == 0): true"): FSDP_GPU,
    ("train_fsdp2.py", "if rank == 0: false #3"): FSDP_RUNS,
    ("train_fsdp2.py", "if rank == 0: true #3"): FSDP_RUNS,
    ("train_hf.py", "if script.tiny: false"): READER_HF,
    ("train_hf.py", "if script.tiny: true"): HF_RUNS,
    ("train_hf.py", "filter line.strip(): kept"): READER_HF,
    ("train_hf.py", "filter line.strip(): dropped"): READER_HF,  # the reader's file has blank lines
    ("train_hf.py", "if script.lora: false"): HF_RUNS,
    ("train_hf.py", "if script.lora: true"): HF + "test_lora_trains_only_the_adapters",
    ("train_hf.py", "if trainer.is_world_process_zero(): false"): HF_RUNS,
    ("train_hf.py", "if trainer.is_world_process_zero(): true"): HF_RUNS,
    ("zero_to_hf.py", "ifexp args.dtype == 'bf16': false"): ZERO_TO_HF,  # --dtype fp32
    ("zero_to_hf.py", "ifexp args.dtype == 'bf16': true"): ZERO_TO_HF,
    ("zero_to_hf.py", "loop Path(args.checkpoint).glob('tokenizer*'): body"): ZERO_TO_HF,  # a tokenizer file copied
    ("dcp_to_hf.py", "if set(saved) != set(state): false"): DCP_TO_HF,
    ("dcp_to_hf.py", "if set(saved) != set(state): true"): READER
    + "test_dcp_to_hf_refuses_a_config_whose_names_are_not_the_checkpoints",
    ("dcp_to_hf.py", "ifexp args.dtype == 'bf16': false"): DCP_TO_HF,
    ("dcp_to_hf.py", "ifexp args.dtype == 'bf16': true"): DCP_TO_HF,
}


def python_blocks() -> dict[str, Path]:
    """Each bound Python block (``verify.record.BLOCKS``) and its one file of ``snippets/``."""
    found = {}
    for title in BLOCKS:
        if language_of(title) == "python":
            (path,) = [path for path in SNIPPETS.rglob(title) if path.is_file()]
            found[title] = path
    return found


def gpu_only(test: str) -> bool:
    """Whether an arm whose test is ``test`` runs only on a GPU (a ``gpu`` test of ``tests/gpu/``)."""
    return test.startswith(GPU_TESTS)


def untaken_in_session(folder: Path, passed: set[str], require_gpu: bool) -> tuple[int, list[str]]:
    """The session's check (``tests/conftest.py``): ``arms.untaken`` over the bound blocks and ``BRANCHES``."""
    return untaken(folder, passed, require_gpu, python_blocks(), BRANCHES, REPO_ROOT)
