"""What a Python block of the pages may use, by allow-list (issue 33, hole 3: comments are not
behaviour).

A block's languages differ only in their comments, so the Italian and the French block behave
alike unless the code reads its own text: its file (``__file__``, ``sys.argv[0]``, a glob), its
code objects (``inspect``, ``linecache``, ``tokenize``, ``traceback``, a frame's ``f_code``,
``co_filename``) or the loader's (``__loader__``, ``__spec__``). The rehearsals catch a block that
does (``tests/snippets/sealed.py``), but only on the paths they run, and a block could first
ask whether it runs in one (an environment variable, a loaded module, its parent process) and
read its comments only outside. A list of such constructs is always one short; so the code
of every Python block of the pages may use only what this module lists, all of it read from
today's blocks and reviewed:

- ``IMPORTS``: ``import X`` (``X``) and ``from X import n`` (``X.n``); no relative or ``*`` import;
- ``MODULE_PATHS``: every chain of attributes through an imported name, in full
  (``os.path.join``, ``torch.accelerator.current_accelerator``, ``transformers.Trainer``:
  ``from transformers import Trainer`` then ``Trainer``);
  a module itself is used only so (no ``m = os``, ``f(sys)``: its other attributes would
  escape the list);
- ``BUILTINS``: every name the block uses and does not bind itself (``print``, ``open``, ``int``);
  so no ``__file__``, ``__loader__``, ``__import__``, ``eval``, ``exec``, ``getattr``, ``globals``;
- ``ATTRIBUTES``: every attribute taken on anything else (a variable, a call's result):
  ``args.epochs``, ``loss.item``; so no ``f_code``, ``co_filename``, ``__dict__``, ``__globals__``;
- ``PATH_CALLS``, ``PATH_METHODS``, ``PATH_KEYWORDS``: every path argument of a call that takes
  one (``open``, ``shutil.copy``, ``torch.save``, ``os.makedirs``, DCP's ``checkpoint_id``,
  ``from_pretrained``, ``save_pretrained``...: tests/verify/test_block_names.py finds them in the
  lists by their signatures) is a path the reader passes (``X.OPTION``, ``OPTION`` in
  ``PATH_OPTIONS``, ``X`` what one of ``PARSERS`` returned from one of ``PARSE_CALLS`` without
  arguments, the option's default one of ``PATH_DEFAULTS``), a path joined under one with parts
  written in the block that hold no ``..`` and no absolute part (``PATH_JOINS``:
  ``os.path.join(args.out, "x")``, ``Path(args.out) / "x"``; a name every binding of which holds
  one, ``_Paths``), or one of ``FILE_CONSTANTS``; the object of ``PATH_RECEIVERS`` (``.exists()``,
  ``.glob(PART)``) too. Each is only called (not ``o = open``); no attribute is assigned
  (``args.data = ...``);
- ``KEYWORDS``: every keyword argument of a call (``encoding=``, ``output_dir=``); no ``**``
  mapping, no ``trust_remote_code=`` (code fetched when it runs);
- ``ENVIRONMENT``: ``os.environ`` only as a lookup of one of these names, written as a string
  (``os.environ.get("LOCAL_RANK")``, ``os.environ["LOCAL_RANK"]``, ``"LOCAL_RANK" in os.environ``);
  any other use of ``os.environ`` (a loop over it, a name in a variable) is refused.

A dunder name (``__x__``) is refused wherever it appears unless listed, and so is binding a name
of Python's builtins that ``BUILTINS`` lacks (``g = eval`` then ``eval = 0``: the name would count
as the block's own, and its first use reaches Python's). ``check_names`` raises
``BlockNameError`` with one line naming the block, the line and the name; the build calls it on
every Python block of every page after the last rewrite (``hooks/checks/same_code.py``), the
artifact check again on the pages as uploaded (``verify/artifact.py``).

The notebooks of ``docs/`` run in IPython, where a cell can read the text of every cell (``In``,
``_ih``, ``_i3``, ``get_ipython()``, ``%history``); the French notebook runs French comments
(``hooks/notebooks/translated.py``). ``check_cells`` checks the code cells of one notebook as
one program (a cell uses what the others bind) by the ``NOTEBOOK_`` lists, which hold only what
today's cells need (each group names its cell); it refuses a line of IPython (``%``, ``!``,
``?``), code that is not Python, binding a name of IPython's namespace (``IPYTHON_NAMES``), a
change of matplotlib's settings other than ``SETTINGS_CALLS`` of a dict written in the cell with
keys of ``NOTEBOOK_SETTINGS`` (``figure.hooks`` names modules matplotlib imports), ``savefig`` to
anything but ``io.BytesIO`` and a path joined with a written part holding ``..`` or an absolute
part.
The build calls it on every notebook before any is executed or taken from a cache
(``hooks/notebooks/cell_names.py``), the artifact check again on the notebook pages as uploaded.

A block or cell that needs a new name adds it here, in a reviewed change that says why
(CONTRIBUTING.md, "A new name in a code block"). Standard library only (``verify/artifact.py``
runs where only its pinned libraries are installed).

What names cannot hold: a value's own reflection. So no ``.format`` on a notebook's labels
(``"{0.__globals__[In]}".format(f)`` reads attributes a string names; the notebook fills its
labels with ``str.replace``), and a file a cell names through a listed path (``Path("snippets/data")
/ name``) is read wherever ``name`` leads: what the kernel opens is recorded and judged after
the run, a read outside what every language reads alike failing the build
(``hooks/notebooks/execute.py``, ``READABLE``, ``OUTSIDE_READABLE``).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

IMPORTS = frozenset(
    {
        "argparse",
        "contextlib",
        "dataclasses.dataclass",
        "datetime",
        "deepspeed.utils.zero_to_fp32.get_fp32_state_dict_from_zero_checkpoint",
        "gc",
        "os",
        "pathlib",
        "pathlib.Path",
        "peft.LoraConfig",
        "peft.get_peft_model",
        "shutil",
        "sys",
        "time",
        "torch",
        "torch.distributed",
        "torch.distributed.checkpoint",
        "torch.distributed.checkpoint.state_dict.get_state_dict",
        "torch.distributed.checkpoint.state_dict.set_state_dict",
        "torch.distributed.device_mesh.init_device_mesh",
        "torch.distributed.fsdp.MixedPrecisionPolicy",
        "torch.distributed.fsdp.fully_shard",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.utils.data.DataLoader",
        "torch.utils.data.DistributedSampler",
        "torch.utils.data.TensorDataset",
        "transformers.AutoConfig",
        "transformers.AutoModelForCausalLM",
        "transformers.AutoTokenizer",
        "transformers.HfArgumentParser",
        "transformers.Trainer",
        "transformers.TrainingArguments",
    }
)

MODULE_PATHS = frozenset(
    {
        "argparse.ArgumentParser",
        "contextlib.nullcontext",
        "datetime.timedelta",
        "gc.collect",
        "os.makedirs",
        "os.path.join",
        "os.statvfs",
        "os.uname",
        "pathlib.Path",
        "shutil.copy",
        "sys.exit",
        "sys.stdout.flush",
        "sys.stdout.write",
        "time.perf_counter",
        "torch.Generator",
        "torch.accelerator.current_accelerator",
        "torch.accelerator.max_memory_allocated",
        "torch.accelerator.set_device_index",
        "torch.accelerator.synchronize",
        "torch.all",
        "torch.arange",
        "torch.bfloat16",
        "torch.cuda.is_available",
        "torch.device",
        "torch.distributed.all_reduce",
        "torch.distributed.checkpoint.FileSystemReader",
        "torch.distributed.checkpoint.load",
        "torch.distributed.checkpoint.save",
        "torch.distributed.destroy_process_group",
        "torch.distributed.get_default_backend_for_device",
        "torch.distributed.get_rank",
        "torch.distributed.get_world_size",
        "torch.distributed.init_process_group",
        "torch.float32",
        "torch.full",
        "torch.manual_seed",
        "torch.nn.Linear",
        "torch.nn.ReLU",
        "torch.nn.Sequential",
        "torch.nn.functional.cross_entropy",
        "torch.nn.functional.mse_loss",
        "torch.optim.AdamW",
        "torch.randint",
        "torch.randn",
        "torch.save",
        "transformers.AutoConfig.for_model",
        "transformers.AutoConfig.from_pretrained",
        "transformers.AutoModelForCausalLM.from_config",
        "transformers.AutoModelForCausalLM.from_pretrained",
        "transformers.AutoTokenizer.from_pretrained",
    }
)

BUILTINS = frozenset(
    {
        "RuntimeError",
        "SystemExit",
        "bool",
        "enumerate",
        "int",
        "len",
        "max",
        "min",
        "open",
        "print",
        "range",
        "set",
        "sorted",
        "str",
        "zip",
    }
)

ATTRIBUTES = frozenset(
    {
        "accelerator",
        "accumulation_steps",
        "add_argument",
        "backward",
        "config",
        "data",
        "distributed_type",
        "dtype",
        "end_training",
        "epochs",
        "exists",
        "f_bavail",
        "f_frsize",
        "flatten",
        "float",
        "glob",
        "is_world_process_zero",
        "item",
        "layers",
        "load_state_dict",
        "logits",
        "lora",
        "manual_seed",
        "masked_fill",
        "model",
        "module",
        "name",
        "nbytes",
        "no_sync",
        "numel",
        "nodename",
        "out",
        "parameters",
        "parse_args",
        "parse_args_into_dataclasses",
        "read",
        "read_metadata",
        "removeprefix",
        "save_model",
        "save_pretrained",
        "seq_len",
        "set_defaults",
        "set_epoch",
        "splitlines",
        "state_dict",
        "state_dict_metadata",
        "step",
        "strip",
        "checkpoint",
        "tie_weights",
        "tiny",
        "to",
        "to_empty",
        "train",
        "type",
        "vocab_size",
        "world_size",
        "zero_grad",
    }
)

# Every keyword argument a call may pass (``f(name=...)``); no ``**mapping``. So no
# ``from_pretrained(..., trust_remote_code=True)``: code fetched at run time, which no check reads.
KEYWORDS = frozenset(
    {
        "action",
        "args",
        "assign",
        "batch_size",
        "bf16",
        "checkpoint_id",
        "choices",
        "default",
        "device",
        "device_ids",
        "dtype",
        "encoding",
        "exist_ok",
        "flush",
        "generator",
        "head_dim",
        "hidden_size",
        "intermediate_size",
        "key",
        "learning_rate",
        "logging_steps",
        "lora_alpha",
        "lr",
        "max_length",
        "max_shard_size",
        "max_steps",
        "mesh",
        "mesh_dim_names",
        "model",
        "model_state_dict",
        "mp_policy",
        "num_attention_heads",
        "num_hidden_layers",
        "num_key_value_heads",
        "optim_state_dict",
        "output_dir",
        "padding",
        "param_dtype",
        "r",
        "reduce_dtype",
        "report_to",
        "return_tensors",
        "sampler",
        "save_strategy",
        "seconds",
        "shuffle",
        "start",
        "strict",
        "target_modules",
        "task_type",
        "tie_word_embeddings",
        "timeout",
        "train_dataset",
        "truncation",
        "type",
        "use_cpu",
        "vocab_size",
    }
)

ENVIRONMENT = frozenset(
    {
        "ACCELERATE_MIXED_PRECISION",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "NCCL_CHECK_ALLOW_CPU",
        "NCCL_CHECK_MIB",
        "NCCL_CHECK_MIN_SHM_MB",
        "NCCL_CHECK_TIMEOUT",
        "NCCL_SHM_DISABLE",
    }
)

# What a block may open, list, copy, save or load: a file or folder the reader names on the
# command line (``args.data``, ``args.out``, ``args.checkpoint``, ``args.model``: the value of one
# of these options), a path joined under one with parts written in the block
# (``os.path.join(args.out, "checkpoint.pt")``, ``Path(args.checkpoint) / "model"``), or one of
# these fixed paths. So no ``open("/proc/self/environ")``, ``open("train_hf.py")`` nor
# ``shutil.copy("train_hf.py", args.data)``: what tells a rehearsal from the reader's run, or the
# block's own text, is not a file the block can name (``PATH_CALLS``).
PATH_OPTIONS = frozenset({"checkpoint", "data", "model", "out"})
FILE_CONSTANTS = frozenset({"/dev/shm"})
# ``X.OPTION`` is the reader's only when ``X`` is what one of ``PARSERS`` returns from one of
# ``PARSE_CALLS`` called without arguments (``args = parser.parse_args()``, ``script, args =
# parser.parse_args_into_dataclasses()``; every binding of ``X`` and of the parser so), and the
# option's default, if any, is one of ``PATH_DEFAULTS``: no file of snippets/ (``add_argument(
# "--out", default="checkpoints")``, the dataclass field ``data: str = "train.txt"``; no other
# keyword for a path option, no ``set_defaults`` of one, no class attribute of its name).
# So no ``class A: data = "train_hf.py"`` then ``open(A.data)``, no ``default="train_hf.py"``.
PARSERS = frozenset({"argparse.ArgumentParser", "transformers.HfArgumentParser"})
PARSE_CALLS = frozenset({"parse_args", "parse_args_into_dataclasses"})
PATH_DEFAULTS = frozenset({"Qwen/Qwen3-0.6B", "checkpoints", "train.txt"})


class PathArguments(NamedTuple):
    """The arguments of a call that name a file or folder: the positional ones at ``positions``
    (from 0) and the keyword ones named ``keywords``; ``positional``: how many positional
    arguments the call may take at all (None: any; a path parameter further on is then out of
    reach, its keyword not being in ``KEYWORDS``)."""

    positions: tuple[int, ...] = ()
    keywords: tuple[str, ...] = ()
    positional: int | None = None


# Every call the lists admit that takes a path (its library's signature: ``typeshed`` for the
# standard library, the annotations of torch, transformers and DeepSpeed), with the arguments
# that are paths; each such argument must be a path of the reader's (``_Paths``: ``X.OPTION``,
# a name every binding of which holds one, a path joined under one) or, given directly, one of
# ``FILE_CONSTANTS``. tests/verify/test_block_names.py finds the path parameters of every
# callable of the lists by their signatures: one without a rule here fails it.
PATH_CALLS = {
    "open": PathArguments((0,), ("file",)),
    "os.makedirs": PathArguments((0,), ("name",)),
    "os.statvfs": PathArguments((0,), ("path",)),
    "shutil.copy": PathArguments((0, 1), ("src", "dst")),
    "torch.save": PathArguments((1,), ("f",)),
    "torch.distributed.init_process_group": PathArguments((1,), ("init_method",)),  # file:// (a FileStore)
    "torch.distributed.checkpoint.FileSystemReader": PathArguments((0,), ("path",)),
    "torch.distributed.checkpoint.load": PathArguments((), ("checkpoint_id",), positional=1),
    "torch.distributed.checkpoint.save": PathArguments((), ("checkpoint_id",), positional=1),
    "deepspeed.utils.zero_to_fp32.get_fp32_state_dict_from_zero_checkpoint": PathArguments(
        (0,), ("checkpoint_dir",), positional=1
    ),
    "transformers.AutoConfig.from_pretrained": PathArguments((0,), ("pretrained_model_name_or_path",), positional=1),
    "transformers.AutoModelForCausalLM.from_pretrained": PathArguments(
        (0,), ("pretrained_model_name_or_path",), positional=1
    ),
    "transformers.AutoTokenizer.from_pretrained": PathArguments((0,), ("pretrained_model_name_or_path",), positional=1),
    "transformers.TrainingArguments": PathArguments((0,), ("output_dir",), positional=1),
}
# The methods (an attribute of ``ATTRIBUTES``, on any object) that take a path argument.
PATH_METHODS = {
    # HfArgumentParser's reads its arguments from a file (args_filename, the 4th): no argument
    "parse_args_into_dataclasses": PathArguments(positional=0),
    # transformers.Trainer's (output_dir); accelerate.Accelerator's (model, save_directory)
    "save_model": PathArguments((0,), ("output_dir", "save_directory"), positional=1),
    "save_pretrained": PathArguments((0,), ("save_directory",), positional=1),  # a model's, a config's
    "train": PathArguments((0,), ("resume_from_checkpoint",)),  # transformers.Trainer's (a Module's: mode)
}
# The methods whose object is the path they read (``pathlib.Path``'s that touch the file
# system): the object must be a path of the reader's, an argument a part (``glob``'s pattern,
# ``_Paths.part``).
PATH_RECEIVERS = frozenset({"exists", "glob"})
# Calls whose result is a path: the first argument a path (or one of ``FILE_CONSTANTS``), every
# other one a part written in the block, holding no ``..`` and no absolute component.
PATH_JOINS = frozenset({"os.path.join", "pathlib.Path"})
# Keyword arguments that are paths in every call (an option of TrainingArguments, DCP's
# checkpoint): in ``set_defaults`` also one of ``PATH_DEFAULTS`` (a default the reader overrides).
PATH_KEYWORDS = frozenset({"checkpoint_id", "output_dir"})


# The notebooks of docs/ (``docs/*.ipynb``, executed at every build): their code cells are one
# program (a cell uses what the cells before it bound), checked with these lists instead (the
# blocks' lists are not theirs: a notebook's names are no snippet's). Each group names the cell
# of docs/memory-notebook.it.ipynb (and .fr) that needs it.
NOTEBOOK_IMPORTS = frozenset(
    {
        # cell 1 (set-up: data, labels, figures and tables in the page's language)
        "IPython.display.HTML",
        "IPython.display.display",
        "babel.numbers.format_decimal",
        "base64",
        "html",
        "io",
        "matplotlib.pyplot",
        "os",
        "pathlib.Path",
        "torch",
        "vram",
        "yaml",
        # cell 3 (FSDP2 on one process: what rank 0 keeps)
        "torch.distributed",
        "torch.distributed.fsdp.MixedPrecisionPolicy",
        "torch.distributed.fsdp.fully_shard",
    }
)
NOTEBOOK_MODULE_PATHS = frozenset(
    {
        # cell 1
        "base64.b64encode",
        "html.escape",
        "io.BytesIO",
        "matplotlib.pyplot.close",
        "matplotlib.pyplot.rcParams.update",
        "matplotlib.pyplot.subplots",
        "yaml.safe_load",
        # cell 2 (memory per card of Llama 3.1 8B, by the calculator)
        "vram.bytes_to_gb",
        "vram.count_params",
        "vram.fit.mib_to_bytes",
        "vram.load_model_config",
        "vram.model_states_per_gpu",
        # cell 3
        "torch.bfloat16",
        "torch.distributed.destroy_process_group",
        "torch.distributed.init_process_group",
        "torch.float32",
        "torch.manual_seed",
        "torch.nn.GELU",
        "torch.nn.Linear",
        "torch.nn.Sequential",
        "torch.optim.AdamW",
        "torch.randn",
    }
)
NOTEBOOK_BUILTINS = frozenset(
    {
        # cell 1; ``display`` too: it imports IPython.display.display, the function IPython's
        # builtins already hold (so it may bind that name)
        "display",
        "round",
        "str",
        # cell 2
        "enumerate",
        "list",
        "max",
        "range",
        "zip",
        # cell 3
        "sum",
    }
)
NOTEBOOK_ATTRIBUTES = frozenset(
    {
        # cell 1 (read_text: only of Path("snippets/data") / a file name: see NOTEBOOK_FILE_CONSTANTS)
        "decode",
        "getvalue",
        "items",
        "join",
        "read_text",
        "replace",
        "savefig",
        # cell 2 (and cell 4: plot, set, grid, legend, total_bytes)
        "axhline",
        "grid",
        "legend",
        "plot",
        "secondary_yaxis",
        "set",
        "set_yticks",
        "tick_params",
        "total",
        "total_bytes",
        "values",
        # cell 3
        "backward",
        "element_size",
        "grad",
        "mean",
        "numel",
        "parameters",
        "pow",
        "state",
        "step",
        "to_local",
        # cell 4 (the measured points in the colour of ZeRO-3's line)
        "get_color",
    }
)
NOTEBOOK_KEYWORDS = frozenset(
    {
        # cell 1
        "dpi",
        "encoding",
        "figsize",
        "format",
        "layout",
        "locale",
        # cell 2 (and cell 4: matplotlib's styles; the fields of the labels, filled by cell 1's fill)
        "alpha",
        "axis",
        "cards",
        "color",
        "columnspacing",
        "ddp",
        "frameon",
        "handlelength",
        "label",
        "labels",
        "length",
        "linestyle",
        "linewidth",
        "loc",
        "marker",
        "model",
        "ncols",
        "unit",
        "xlabel",
        "xticks",
        "ylabel",
        "ylim",
        "zero1",
        "zero2",
        "zero3",
        # cell 3
        "bias",
        "lr",
        "mp_policy",
        "param_dtype",
        "rank",
        "reduce_dtype",
        "world_size",
        # cell 4
        "markeredgewidth",
        "markerfacecolor",
        "markersize",
        "measured",
        "params",
        "predicted",
    }
)
NOTEBOOK_ENVIRONMENT = frozenset({"GUIDE_LANG"})  # cell 1: the page's language (hooks/notebooks/execute.py sets it)
# cell 1: the site's data, ``Path("snippets/data")``; nothing else by name (no ``open``): what a
# cell reads under it (``DATA / name``) is judged when it runs (hooks/notebooks/execute.py)
NOTEBOOK_PATH_OPTIONS: frozenset[str] = frozenset()
NOTEBOOK_FILE_CONSTANTS = frozenset({"snippets/data"})
# cell 1: matplotlib's settings, only by ``SETTINGS_CALLS`` with a dict written in the cell whose
# keys are these strings and whose values are constants. A setting can name code: matplotlib
# imports and calls the ``"module:attribute"`` strings of ``figure.hooks`` for every new figure
# (so ``{"figure.hooks": ["inspect:..."]}`` would reach a module no list holds).
NOTEBOOK_SETTINGS = frozenset(
    {
        "axes.labelsize",
        "font.size",
        "legend.fontsize",
        "lines.linewidth",
        "lines.markersize",
        "xtick.labelsize",
        "ytick.labelsize",
    }
)
# The calls that change matplotlib's settings (rcParams, rc, rc_context, style): any of the
# NOTEBOOK_MODULE_PATHS that does is here (tests/verify/test_block_names.py).
SETTINGS_CALLS = frozenset({"matplotlib.pyplot.rcParams.update"})
# cell 1: a figure is written only to memory: ``savefig``'s file is a name every binding of
# which is ``io.BytesIO()`` (no ``fig.savefig(Path("snippets/data") / "/abs/x.png")``).
MEMORY_WRITES = frozenset({"savefig"})
MEMORY_FILES = frozenset({"io.BytesIO"})

# What a block or cell may not bind (``x = eval``, ``def In(): ...``, ``for _ih in ...``) unless
# its BUILTINS list holds it: a name Python's builtins define, and in a notebook a name of
# IPython's namespace (its cells' text: ``In``, ``_ih``, ``_i3``; its outputs: ``Out``, ``_3``;
# the shell: ``get_ipython``). Bound anywhere, the name would count as the block's own
# everywhere, and a use before the binding reaches Python's or IPython's (``g = eval; eval = 0``).
IPYTHON_NAMES = frozenset(
    {"In", "Out", "_", "__", "___", "_i", "_ii", "_iii", "_ih", "_oh", "_dh", "get_ipython", "display", "exit", "quit"}
)
IPYTHON_NUMBERED = re.compile(r"_i?\d+")  # _i3: the text of cell 3; _3: its output
PYTHON_NAMES = frozenset(dir(builtins)) - IPYTHON_NAMES  # the same in a process where IPython runs
# An IPython line (a magic, a shell command, help): the kernel would run it, Python cannot parse it.
IPYTHON_ESCAPES = ("%", "!", "?")

PYTHON_FENCES = ("python", "py", "python3", "py3")  # a fence's language that Pygments reads as Python
WHERE = "verify/block_names.py; CONTRIBUTING.md, 'A new name in a code block'"


class BlockNameError(ValueError):
    """A block uses a name, attribute, import or environment variable the allow-list lacks."""


class _Lists(NamedTuple):
    """The lists one kind of code is checked with (a page's blocks, a notebook's cells)."""

    imports: frozenset[str]
    module_paths: frozenset[str]
    builtins: frozenset[str]
    attributes: frozenset[str]
    keywords: frozenset[str]
    environment: frozenset[str]
    path_options: frozenset[str]
    file_constants: frozenset[str]
    notebook: bool
    path_calls: dict[str, PathArguments]
    path_methods: dict[str, PathArguments]
    path_receivers: frozenset[str]
    settings: frozenset[str] = frozenset()
    memory_writes: frozenset[str] = frozenset()


def _block_lists() -> _Lists:  # read when called: a test may take an entry out
    return _Lists(
        IMPORTS,
        MODULE_PATHS,
        BUILTINS,
        ATTRIBUTES,
        KEYWORDS,
        ENVIRONMENT,
        PATH_OPTIONS,
        FILE_CONSTANTS,
        notebook=False,
        path_calls=PATH_CALLS,
        path_methods=PATH_METHODS,
        path_receivers=PATH_RECEIVERS,
    )


def _notebook_lists() -> _Lists:
    return _Lists(
        NOTEBOOK_IMPORTS,
        NOTEBOOK_MODULE_PATHS,
        NOTEBOOK_BUILTINS,
        NOTEBOOK_ATTRIBUTES,
        NOTEBOOK_KEYWORDS,
        NOTEBOOK_ENVIRONMENT,
        NOTEBOOK_PATH_OPTIONS,
        NOTEBOOK_FILE_CONSTANTS,
        notebook=True,
        path_calls={},
        path_methods={},
        path_receivers=frozenset(),
        settings=NOTEBOOK_SETTINGS,
        memory_writes=MEMORY_WRITES,
    )


def _refuse(where: str, node: ast.AST, what: str) -> BlockNameError:
    return BlockNameError(f"{where}, line {getattr(node, 'lineno', '?')}: {what} is not on the allow-list ({WHERE})")


def _bindings(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """(node, name) of every name the block binds itself: assignments, loop and ``with``
    targets, functions, classes, arguments, ``except ... as``, captures of ``case``, imports."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            yield node, node.id
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node, node.name
        elif isinstance(node, ast.arg):
            yield node, node.arg
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            yield node, node.name
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node, node.rest
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    yield alias, alias.asname or alias.name.split(".")[0]


def _bound(tree: ast.AST) -> set[str]:
    """Every name the block binds itself, imports aside (``_imports``)."""
    return {name for node, name in _bindings(tree) if not isinstance(node, ast.alias)}


def _reserved(name: str, lists: _Lists) -> bool:
    """Whether a block may not bind ``name`` (``PYTHON_NAMES``, in a notebook ``IPYTHON_NAMES``)."""
    if name in lists.builtins:
        return False
    return name in PYTHON_NAMES or (
        lists.notebook and (name in IPYTHON_NAMES or IPYTHON_NUMBERED.fullmatch(name) is not None)
    )


def _imports(tree: ast.AST, lists: _Lists) -> tuple[dict[str, str], list[tuple[ast.AST, str]]]:
    """(each name an import binds -> the dotted path it stands for, the imports refused)."""
    aliases: dict[str, str] = {}
    refused: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in lists.imports:
                    refused.append((node, f"import {alias.name}"))
                elif alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module is None:
                refused.append((node, "a relative import"))
                continue
            for alias in node.names:
                path = f"{node.module}.{alias.name}"
                if alias.name == "*" or path not in lists.imports:
                    refused.append((node, f"from {node.module} import {alias.name}"))
                else:
                    aliases[alias.asname or alias.name] = path
    return aliases, refused


def _chain(node: ast.Attribute) -> tuple[ast.expr, list[str]]:
    """The root of an attribute chain and its attribute names (``a.b.c`` -> ``a``, ``[b, c]``)."""
    names: list[str] = []
    root: ast.expr = node
    while isinstance(root, ast.Attribute):
        names.insert(0, root.attr)
        root = root.value
    return root, names


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}


def _environment_name(node: ast.AST, parent: ast.AST, grandparent: ast.AST | None) -> str | None:
    """The listed-or-not name a use of ``os.environ`` (``node``) looks up, or None when the use is
    not a lookup of a name written as a string."""
    key: ast.expr | None
    if isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Load):
        key = parent.slice
    elif isinstance(parent, ast.Compare) and parent.comparators == [node] and len(parent.ops) == 1:
        key = parent.left if isinstance(parent.ops[0], (ast.In, ast.NotIn)) else None
    elif (
        isinstance(parent, ast.Attribute)
        and parent.attr == "get"
        and isinstance(grandparent, ast.Call)
        and grandparent.func is parent
        and grandparent.args
    ):
        key = grandparent.args[0]
    else:
        return None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def _environment_use(
    node: ast.Attribute, path: str, parents: dict[ast.AST, ast.AST], lists: _Lists
) -> Iterator[tuple[ast.AST, str]]:
    """A chain through ``os.environ`` (``node``, the whole chain): refused unless a lookup of a
    listed name (``os.environ[NAME]``, ``os.environ.get(NAME...)``, ``NAME in os.environ``)."""
    environ: ast.expr = node
    while isinstance(environ, ast.Attribute) and isinstance(environ.value, ast.Attribute):
        environ = environ.value  # down to the ``os.environ`` node (an import of os is the root)
    if path not in ("os.environ", "os.environ.get"):
        yield node, path
        return
    parent = parents[environ]
    name = _environment_name(environ, parent, parents.get(parent))
    if name is None:
        yield node, "os.environ used otherwise than a lookup of a name written as a string"
    elif name not in lists.environment:
        yield node, f"the environment variable {name}"


def _call_path(call: ast.Call, aliases: dict[str, str], bound: set[str]) -> str | None:
    """The dotted name a call calls (``open``, ``pathlib.Path``), or None when it calls anything else."""
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in aliases:
            return aliases[func.id]
        return func.id if func.id not in bound else None
    if isinstance(func, ast.Attribute):
        root, names = _chain(func)
        if isinstance(root, ast.Name) and root.id in aliases:
            return ".".join([aliases[root.id], *names])
    return None


def _assigned(tree: ast.AST, parents: dict[ast.AST, ast.AST]) -> dict[str, list[ast.expr | None]]:
    """Each name the block binds -> the value of each of its bindings: the right side of
    ``name = value`` or ``a, name = value`` (one target of names), None for any other binding
    (a loop, an argument, a class, ``with ... as``, an import, ``a = name = value``)."""
    values: dict[str, list[ast.expr | None]] = {}
    for node, name in _bindings(tree):
        parent, value = parents.get(node), None
        if isinstance(node, ast.Name) and isinstance(parent, ast.Assign) and parent.targets == [node]:
            value = parent.value
        elif isinstance(node, ast.Name) and isinstance(parent, ast.Tuple):
            assign = parents.get(parent)
            if isinstance(assign, ast.Assign) and assign.targets == [parent]:
                value = assign.value
        values.setdefault(name, []).append(value)
    return values


def _parsers(tree: ast.AST, aliases: dict[str, str], bound: set[str], parents: dict[ast.AST, ast.AST]) -> set[str]:
    """The names that hold the reader's arguments: every binding of each is a call without
    arguments of one of ``PARSE_CALLS`` on a name every binding of which is a call of one of
    ``PARSERS`` (``args = parser.parse_args()``, ``parser = argparse.ArgumentParser()``)."""
    values = _assigned(tree, parents)

    def every(name: str, test: Callable[[ast.expr], bool]) -> bool:
        return bool(values.get(name)) and all(value is not None and test(value) for value in values[name])

    def parser(value: ast.expr) -> bool:  # through an import the block does not bind again
        root = value.func if isinstance(value, ast.Call) else None
        while isinstance(root, ast.Attribute):
            root = root.value
        return (
            isinstance(value, ast.Call)
            and isinstance(root, ast.Name)
            and root.id not in bound
            and _call_path(value, aliases, bound) in PARSERS
        )

    parsers = {name for name in values if every(name, parser)}

    def parsed(value: ast.expr) -> bool:
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in PARSE_CALLS
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id in parsers
            and not value.args
            and not value.keywords
        )

    return {name for name in values if every(name, parsed)}


def _option_names(call: ast.Call) -> list[str] | None:
    """The destinations ``add_argument(...)`` declares (``"--out"`` -> ``out``), None when a name
    is not written as a string."""
    names = []
    for arg in call.args:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            return None
        names.append(arg.value.lstrip("-").replace("-", "_"))
    return names


def _path_defaults(tree: ast.AST, lists: _Lists) -> Iterator[tuple[ast.AST, str]]:
    """What would give a path option a value the reader did not write: an option of that name
    declared with another keyword than ``default=`` or a default outside ``PATH_DEFAULTS``,
    named otherwise than by strings, given a default by ``set_defaults``, or a name of a class
    (a dataclass field, a class attribute) bound otherwise than ``NAME: type = DEFAULT``."""

    def default(value: ast.expr | None, where: ast.AST, name: str) -> Iterator[tuple[ast.AST, str]]:
        if value is not None and not (isinstance(value, ast.Constant) and value.value in PATH_DEFAULTS):
            yield where, f"the default {ast.unparse(value)} of the path option {name} (not one of PATH_DEFAULTS)"

    if not lists.path_options:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "add_argument":
                names = _option_names(node)
                if names is None:
                    yield node, "add_argument with an option not named by a string"
                    continue
                for name in (n for n in names if n in lists.path_options):
                    for keyword in node.keywords:
                        if keyword.arg != "default":
                            yield keyword, f"the keyword argument {keyword.arg} of the path option {name}"
                        else:
                            yield from default(keyword.value, keyword, name)
            elif node.func.attr == "set_defaults":
                for keyword in node.keywords:
                    if keyword.arg in lists.path_options:
                        yield keyword, f"a default of the path option {keyword.arg} by set_defaults"
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                for child, name in _class_level(statement):
                    if name not in lists.path_options:
                        continue
                    if isinstance(statement, ast.AnnAssign) and child is statement.target:
                        yield from default(statement.value, statement, name)
                    else:
                        yield (
                            child,
                            f"{name} bound in the class {node.name} otherwise than as a field (NAME: type = default)",
                        )


def _class_level(statement: ast.stmt) -> Iterator[tuple[ast.AST, str]]:
    """(node, name) of each name a statement of a class body binds in the class itself (not
    in the bodies of the functions or classes it defines)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield statement, statement.name
        return
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node, node.name
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            yield node, node.id
        stack.extend(ast.iter_child_nodes(node))


def _safe_part(text: str) -> bool:
    """Whether ``text``, joined under a path, stays under it: no absolute part, no ``..``."""
    return not text.startswith("/") and ".." not in text.split("/") and "\0" not in text


def _written_part_refused(node: ast.expr) -> bool:
    """Whether ``node``, the right side of ``path / node``, is a string written in the code that
    leaves the path (``"/abs"``, ``"../x"``, ``f"/{x}"``, ``f"{x}/../y"``); other values: no."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return not _safe_part(node.value)
    if isinstance(node, ast.JoinedStr):
        pieces = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        first = node.values[0] if node.values else None
        leading = isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("/")
        return leading or any(".." in piece for piece in pieces)
    return False


class _Paths:
    """The paths of the reader's in one block's code: ``X.OPTION`` (``X`` one of ``parsed``,
    ``OPTION`` a path option), a join under one with parts written in the block (``_part``:
    ``os.path.join(P, "x")``, ``Path(P)``, ``P / "x"``, ``P / f"epoch-{n + 1}"`` with ``n`` an int
    of ``range``), and a name every binding of which holds one: assigned one, a loop's name over
    ``P.glob(PART)`` or a list of paths, a function's parameter that every call passes one (the
    function called only by its name), a ``key=`` lambda's over a list of paths. The names are
    the largest set so (every binding's value is a path of the others'), as ``_bindings`` sees
    them: by name, in every scope."""

    def __init__(
        self,
        tree: ast.AST,
        aliases: dict[str, str],
        bound: set[str],
        parents: dict[ast.AST, ast.AST],
        parsed: set[str],
        lists: _Lists,
    ) -> None:
        self.aliases, self.bound, self.parents, self.parsed, self.lists = aliases, bound, parents, parsed, lists
        self.bindings: dict[str, list[ast.AST]] = {}
        for node, name in _bindings(tree):
            if name not in aliases:
                self.bindings.setdefault(name, []).append(node)
        self.loads: dict[str, list[ast.Name]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.loads.setdefault(node.id, []).append(node)
        self.paths, self.lists_of, self.ints = set(self.bindings), set(self.bindings), set(self.bindings)
        while True:  # the largest fixed point: drop a name while one of its bindings holds no path
            paths = {n for n in self.paths if all(self._binds(b, self.path) for b in self.bindings[n])}
            lists_of = {n for n in self.lists_of if all(self._binds(b, self.path_list) for b in self.bindings[n])}
            ints = {n for n in self.ints if all(self._binds_int(b) for b in self.bindings[n])}
            if (paths, lists_of, ints) == (self.paths, self.lists_of, self.ints):
                break
            self.paths, self.lists_of, self.ints = paths, lists_of, ints

    def _builtin(self, node: ast.expr, *names: str) -> bool:
        """Whether ``node`` calls one of Python's ``names`` (not bound again by the code)."""
        return isinstance(node, ast.Call) and _call_path(node, self.aliases, self.bound) in names

    def _binds(self, node: ast.AST, holds: Callable[[ast.expr], bool]) -> bool:
        """Whether the binding ``node`` gives its name a value ``holds`` accepts (a loop's name:
        each item of a list of paths, when ``holds`` is ``path``)."""
        parent = self.parents.get(node)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            if isinstance(parent, ast.Assign) and parent.targets == [node]:
                return holds(parent.value)
            if isinstance(parent, (ast.For, ast.comprehension)) and parent.target is node:
                return holds == self.path and self.path_list(parent.iter)
            return False
        if isinstance(node, ast.arg) and holds == self.path:
            return self._parameter(node)
        return False

    def _binds_int(self, node: ast.AST) -> bool:
        parent = self.parents.get(node)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            if isinstance(parent, ast.Assign) and parent.targets == [node]:
                return self.integer(parent.value)
            if isinstance(parent, (ast.For, ast.comprehension)) and parent.target is node:
                return self._builtin(parent.iter, "range")
        return False

    def _parameter(self, node: ast.arg) -> bool:
        """Whether a parameter holds a path in every call: of a function without decorators,
        outside a class, bound once, its name used only to call it with a path there and without
        ``*``; or of a lambda given as ``key=`` to ``max``, ``min`` or ``sorted`` of a list of paths."""
        arguments = self.parents.get(node)
        function = self.parents.get(arguments) if arguments is not None else None
        if not isinstance(arguments, ast.arguments) or arguments.vararg is node or arguments.kwarg is node:
            return False
        positional = [*arguments.posonlyargs, *arguments.args]
        if node not in positional or positional.index(node) >= len(positional) - len(arguments.defaults):
            return False
        index = positional.index(node)
        if isinstance(function, ast.Lambda):
            keyword = self.parents.get(function)
            call = self.parents.get(keyword) if keyword is not None else None
            return (
                len(positional) == 1
                and isinstance(keyword, ast.keyword)
                and keyword.arg == "key"
                and isinstance(call, ast.Call)
                and self._builtin(call, "max", "min", "sorted")
                and len(call.args) == 1
                and self.path_list(call.args[0])
            )
        if not isinstance(function, ast.FunctionDef) or function.decorator_list:
            return False
        if isinstance(self.parents.get(function), ast.ClassDef) or self.bindings.get(function.name) != [function]:
            return False
        calls = []
        for use in self.loads.get(function.name, []):
            call = self.parents.get(use)
            if not (isinstance(call, ast.Call) and call.func is use):
                return False
            calls.append(call)
        return all(
            len(call.args) > index
            and not any(isinstance(arg, ast.Starred) for arg in call.args[: index + 1])
            and self.path(call.args[index])
            for call in calls
        )

    def path(self, node: ast.expr) -> bool:
        """Whether ``node`` is a path of the reader's (see the class)."""
        if isinstance(node, ast.Name):
            return node.id in self.paths
        if isinstance(node, ast.Attribute):
            return (
                node.attr in self.lists.path_options
                and isinstance(node.value, ast.Name)
                and node.value.id in self.parsed
            )
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self.path(node.left) and self.part(node.right)
        if isinstance(node, ast.Call):
            called = _call_path(node, self.aliases, self.bound)
            if called in PATH_JOINS:
                return (
                    bool(node.args)
                    and not node.keywords
                    and self.path(node.args[0])
                    and all(self.part(arg) for arg in node.args[1:])
                )
            if called in ("max", "min"):
                return (
                    len(node.args) == 1
                    and self.path_list(node.args[0])
                    and all(keyword.arg == "key" for keyword in node.keywords)
                )
        return False

    def path_list(self, node: ast.expr) -> bool:
        """Whether ``node`` is a collection of paths of the reader's: ``P.glob(PART)``, a list
        comprehension of paths, ``sorted`` of one, a name every binding of which holds one."""
        if isinstance(node, ast.Name):
            return node.id in self.lists_of
        if isinstance(node, ast.ListComp):
            return self.path(node.elt)
        if isinstance(node, ast.Call) and self._builtin(node, "sorted"):
            return len(node.args) == 1 and self.path_list(node.args[0])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "glob":
            return self.path(node.func.value) and len(node.args) == 1 and not node.keywords and self.part(node.args[0])
        return False

    def integer(self, node: ast.expr) -> bool:
        """Whether ``node`` is an int written in the code, of ``range`` or arithmetic of those
        (its digits are a part: no ``/``, no ``..``)."""
        if isinstance(node, ast.Constant):
            return type(node.value) is int
        if isinstance(node, ast.Name):
            return node.id in self.ints
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
            return self.integer(node.left) and self.integer(node.right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self.integer(node.operand)
        return False

    def part(self, node: ast.expr) -> bool:
        """Whether ``node`` is a part written in the code that a join keeps under its path: a
        string with no absolute part and no ``..`` (``"model"``, ``"tokenizer*"``), or an
        f-string of ints (``integer``) and pieces without ``/`` or ``..`` (``f"epoch-{n + 1}"``)."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str) and _safe_part(node.value)
        if isinstance(node, ast.JoinedStr):
            return all(
                (isinstance(v, ast.Constant) and "/" not in str(v.value) and ".." not in str(v.value))
                or (isinstance(v, ast.FormattedValue) and v.format_spec is None and self.integer(v.value))
                for v in node.values
            )
        return False

    def refused(self, node: ast.expr) -> str | None:
        """Why ``node``, given as a path, is refused, or None: a path of the reader's, or one of
        the lists' fixed paths written as it is."""
        if isinstance(node, ast.Constant) and node.value in self.lists.file_constants:
            return None
        if self.path(node):
            return None
        if (
            isinstance(node, ast.Attribute)
            and node.attr in self.lists.path_options
            and isinstance(node.value, ast.Name)
            and node.value.id not in self.parsed
        ):
            return (
                f"({node.value.id} is not what an ArgumentParser's parse_args() returned: "
                "a file the reader does not name on the command line)"
            )
        return (
            "(a file the reader does not name on the command line, nor one joined under such a "
            "file with parts written in the block, without '..' or an absolute part)"
        )

    def memory(self, node: ast.expr) -> bool:
        """Whether ``node`` is a name every binding of which is a call without arguments of one
        of ``MEMORY_FILES`` (``buffer = io.BytesIO()``)."""
        if not isinstance(node, ast.Name) or not self.bindings.get(node.id):
            return False
        for binding in self.bindings[node.id]:
            parent = self.parents.get(binding)
            if not (isinstance(binding, ast.Name) and isinstance(parent, ast.Assign) and parent.targets == [binding]):
                return False
            value = parent.value
            if not (
                isinstance(value, ast.Call)
                and _call_path(value, self.aliases, self.bound) in MEMORY_FILES
                and not value.args
                and not value.keywords
            ):
                return False
        return True


def _shown(call: ast.Call, node: ast.expr) -> str:
    """``node`` as an argument of ``call`` is written (``dst=args.out``, ``'/proc/x'``)."""
    for keyword in call.keywords:
        if keyword.value is node and keyword.arg:
            return f"{keyword.arg}={ast.unparse(node)}"
    return ast.unparse(node)


def _path_uses(call: ast.Call, called: str | None, paths: _Paths, lists: _Lists) -> Iterator[tuple[ast.AST, str]]:
    """What is refused about the paths a call passes: each argument of ``PATH_CALLS``,
    ``PATH_METHODS`` and ``PATH_KEYWORDS`` that is not a path of the reader's (``_Paths``),
    the object of ``PATH_RECEIVERS``, the parts of ``PATH_JOINS``; in a notebook, ``savefig``
    to anything but memory and matplotlib's settings outside ``NOTEBOOK_SETTINGS``."""
    method = call.func.attr if called is None and isinstance(call.func, ast.Attribute) else None
    name = called or f".{method}"
    spec = lists.path_calls.get(called) if called else lists.path_methods.get(method or "")
    starred = any(isinstance(arg, ast.Starred) for arg in call.args)
    checked: list[ast.expr] = []
    if spec is not None:
        if starred:
            yield call, f"{name} with a * argument (its paths would not be checked)"
            return
        if spec.positional is not None and len(call.args) > spec.positional:
            yield call, f"{name} with more than {spec.positional} positional argument(s)"
        checked += [call.args[i] for i in spec.positions if i < len(call.args)]
        checked += [k.value for k in call.keywords if k.arg in spec.keywords]
    for keyword in call.keywords:
        if keyword.arg in PATH_KEYWORDS and keyword.value not in checked:
            default = isinstance(keyword.value, ast.Constant) and keyword.value.value in PATH_DEFAULTS
            if not (method == "set_defaults" and default):
                checked.append(keyword.value)
    if called in PATH_JOINS:
        if starred or call.keywords or not call.args:
            yield call, f"{name} of anything but a path and parts written in the code"
            return
        checked.append(call.args[0])
        for part in call.args[1:]:
            if not paths.part(part):
                yield (
                    call,
                    f"{name}(..., {ast.unparse(part)}) (a part with '..' or an absolute part, or not written in the code)",
                )
    for node in checked:
        if (why := paths.refused(node)) is not None:
            yield call, f"{name}({_shown(call, node)}) {why}"
    receiver = call.func.value if method in lists.path_receivers and isinstance(call.func, ast.Attribute) else None
    if receiver is not None and (why := paths.refused(receiver)) is not None:
        yield call, f".{method}() of {ast.unparse(receiver)} {why}"
    if receiver is not None and (starred or call.keywords or not all(paths.part(arg) for arg in call.args)):
        shown = ", ".join(ast.unparse(arg) for arg in [*call.args, *call.keywords])
        yield call, f".{method}({shown}) (a pattern with '..' or an absolute part, or not written in the code)"
    if method in lists.memory_writes:
        target = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "fname"), None)
        if starred or target is None or not paths.memory(target):
            shown = ast.unparse(target) if target is not None else ""
            yield call, f".{method}({shown}) (a figure is written only to a name bound to io.BytesIO())"
    if called in SETTINGS_CALLS:
        yield from _settings_use(call, called, lists)


def _settings_use(call: ast.Call, called: str, lists: _Lists) -> Iterator[tuple[ast.AST, str]]:
    """A change of matplotlib's settings: one dict written in the call, its keys strings of the
    lists' settings, its values constants."""
    mapping = call.args[0] if len(call.args) == 1 and not call.keywords else None
    if not isinstance(mapping, ast.Dict):
        yield call, f"{called} of anything but a dict written in the call"
        return
    for key, value in zip(mapping.keys, mapping.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value in lists.settings):
            shown = ast.unparse(key) if key is not None else "**"
            yield key or mapping, f"the setting {shown} of {called}"
        elif not isinstance(value, ast.Constant):
            yield value, f"the setting {key.value!r} of {called} given {ast.unparse(value)} (not a constant)"


def _uncalled(
    node: ast.expr, path: str, parents: dict[ast.AST, ast.AST], lists: _Lists, parser: Callable[[ast.AST], bool]
) -> Iterator[tuple[ast.AST, str]]:
    """A name that takes a path (``PATH_CALLS``, ``PATH_JOINS``, ``SETTINGS_CALLS``) anywhere but
    called (``o = open``, ``map(open, ...)``): its arguments would escape ``_path_uses``. A class
    whose fields a parser reads (``HfArgumentParser((ScriptArguments, TrainingArguments))``,
    ``parser`` tells) is the reader's options: its paths are the command line's, its defaults
    checked (``PATH_KEYWORDS`` in ``set_defaults``)."""
    parent = parents.get(node)
    named = lists.path_calls.keys() | PATH_JOINS | SETTINGS_CALLS
    if path not in named or (isinstance(parent, ast.Call) and parent.func is node):
        return
    holder = parents.get(parent) if isinstance(parent, ast.Tuple) else None
    if (parent is not None and parser(parent)) or (
        isinstance(holder, ast.Call) and parser(holder) and holder.args == [parent]
    ):
        return
    yield node, f"{path} used otherwise than called"


def _uses(tree: ast.AST, lists: _Lists | None = None) -> Iterator[tuple[ast.AST, str]]:
    """Each use the allow-lists (``lists``; a page's blocks' by default) refuse, as (node, what)."""
    lists = lists or _block_lists()
    (aliases, refused), bound = _imports(tree, lists), _bound(tree)
    yield from refused
    for node, name in _bindings(tree):
        if _reserved(name, lists):
            yield node, f"{name} (a name of Python's or IPython's, bound by the code)"
    parents = _parents(tree)
    parsed = _parsers(tree, aliases, bound, parents) if lists.path_options else set()
    paths = _Paths(tree, aliases, bound, parents, parsed, lists)
    methods = lists.path_methods.keys() | lists.path_receivers | lists.memory_writes

    def parser(call: ast.AST) -> bool:  # a call of PARSERS (the classes given to it are options)
        return isinstance(call, ast.Call) and _call_path(call, aliases, bound) in PARSERS

    yield from _path_defaults(tree, lists)
    modules = {  # the names ``import X`` binds (a module, not a function or class of one)
        alias.asname or alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            dunder = node.id.startswith("__") and node.id not in lists.builtins
            if dunder or (isinstance(node.ctx, ast.Load) and node.id not in (aliases.keys() | bound | lists.builtins)):
                yield node, node.id
            elif isinstance(node.ctx, ast.Load):
                path = aliases.get(node.id, node.id if node.id not in bound else "")
                yield from _uncalled(node, path, parents, lists, parser)
                parent = parents.get(node)
                if node.id in modules and not (isinstance(parent, ast.Attribute) and parent.value is node):
                    yield node, f"the module {aliases[node.id]} used otherwise than through its listed attributes"
        elif isinstance(node, ast.Attribute):
            if not isinstance(node.ctx, ast.Load):
                yield node, f"an assignment to .{node.attr}"
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue  # checked with the whole chain
            root, names = _chain(node)
            if isinstance(root, ast.Name) and root.id in aliases:
                path = ".".join([aliases[root.id], *names])
                if path == "os.environ" or path.startswith("os.environ."):
                    yield from _environment_use(node, path, parents, lists)
                elif path not in lists.module_paths:
                    yield node, path
                else:
                    yield from _uncalled(node, path, parents, lists, parser)
                continue
            link: ast.expr = node
            while isinstance(link, ast.Attribute):  # every attribute of a chain on anything else
                if link.attr not in lists.attributes:
                    yield link, f".{link.attr}"
                elif link.attr in methods and not (isinstance(up := parents.get(link), ast.Call) and up.func is link):
                    yield link, f".{link.attr} used otherwise than called"
                link = link.value
        elif isinstance(node, ast.Call):
            called = _call_path(node, aliases, bound)
            yield from _path_uses(node, called, paths, lists)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _written_part_refused(node.right):
            yield node, f"{ast.unparse(node)} (a path joined with an absolute part or '..')"
        elif isinstance(node, ast.keyword) and node.arg not in lists.keywords:
            yield node, f"the keyword argument {node.arg}" if node.arg else "a ** argument"


def _place(use: tuple[ast.AST, str]) -> tuple[int, int, int, int]:
    """Where a use is, to sort them: the first, then the innermost."""
    node = use[0]
    return (
        getattr(node, "lineno", 0),
        getattr(node, "col_offset", 0),
        getattr(node, "end_lineno", 0) or 0,
        getattr(node, "end_col_offset", 0) or 0,
    )


def check_names(code: str, where: str) -> None:
    """Raise BlockNameError for the first use in ``code`` (a Python block; ``where`` names it in
    the message: title, language, page) that the allow-lists above do not hold. Raises
    SyntaxError for code that is not Python."""
    for node, what in sorted(_uses(ast.parse(code)), key=_place):
        raise _refuse(where, node, what)


def check_cells(cells: list[tuple[str, str]]) -> None:
    """Raise BlockNameError, in one line naming the cell (``where``) and its line, for the
    first thing in the code cells of a notebook (``cells``: (code, where), in order) that the
    ``NOTEBOOK_`` lists do not hold: a line IPython reads and Python cannot (``%history``,
    ``!ls``, ``?x``), code that is not Python, or a use of a name the cells do not bind
    (``In``, ``_ih``, ``get_ipython``, ``inspect``...). The cells are one program: a cell uses
    what the others bind."""
    body: list[ast.stmt] = []
    starts: list[tuple[int, str]] = []  # (the program's line before the cell's first, where)
    offset = 0
    for code, where in cells:
        for number, text in enumerate(code.splitlines(), start=1):
            if text.lstrip().startswith(IPYTHON_ESCAPES):
                raise BlockNameError(
                    f"{where}, line {number}: {text.strip()[:40]!r}, a line of IPython (a magic, a shell "
                    f"command or help), is no Python: a cell is plain Python ({WHERE})"
                )
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            raise BlockNameError(f"{where}, line {exc.lineno}: not Python ({exc.msg}) ({WHERE})") from None
        ast.increment_lineno(tree, offset)
        body += tree.body
        starts.append((offset, where))
        offset += len(code.splitlines()) + 1
    program = ast.Module(body=body, type_ignores=[])
    for node, what in sorted(_uses(program, _notebook_lists()), key=_place):
        line: int = getattr(node, "lineno", 0)
        start, cell = next(((s, w) for s, w in reversed(starts) if s < line), starts[0])
        raise BlockNameError(f"{cell}, line {line - start}: {what} is not on the allow-list ({WHERE})")
