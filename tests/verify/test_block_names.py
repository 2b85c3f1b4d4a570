"""Comments are not behaviour (issue 33, hole 3): a Python block of the pages may use only what
``verify/block_names.py`` lists, so none can read its own text or ask whether it runs in a
rehearsal, whatever the construct.

The oracle for "what the project's blocks need" is the blocks themselves: every Python file of
``snippets/`` passes, and the site the suite builds passed the same check on every Python block
of every page (``hooks/checks/same_code.py``). Each evasion below is a real way for a block to
reach its own comments or a rehearsal's tell (Python's documentation: ``open(__file__)``,
``inspect.getsource``, ``importlib.abc.InspectLoader.get_source``, ``linecache``, a frame's
``f_code``, ``/proc/self/environ``); each is refused in one line naming the block, the line and
the construct.
"""

from __future__ import annotations

import pytest

from hooks.checks.same_code import TitledBlocks
from hooks.errors import RenderError
from tests.conftest import REPO_ROOT
from tests.verify.test_same_code import ITALIAN, page
from verify.block_names import BlockNameError, check_names

ARGS = "import argparse\nargs = argparse.ArgumentParser().parse_args()\n"
PARSER = "import argparse\nparser = argparse.ArgumentParser()\n"
# (the block, the line refused, the construct the message names)
EVASIONS = {
    "open(__file__)": ("print(open(__file__).read())\n", 1, "open(__file__)"),
    "inspect.getsource": ("import inspect\nprint(inspect.getsource(inspect))\n", 1, "import inspect"),
    "__loader__.get_source": ("print(__loader__.get_source(__name__))\n", 1, "__loader__"),
    "linecache": ("import linecache\nlinecache.getline('x.py', 1)\n", 1, "import linecache"),
    "tokenize": ("from tokenize import open as source\n", 1, "from tokenize import open"),
    "importlib of itself": ("import importlib\n", 1, "import importlib"),
    "the rehearsal's variable": (
        'import os\nif not os.environ.get("REHEARSAL_SEALED"):\n    print(1)\n',
        2,
        "the environment variable REHEARSAL_SEALED",
    ),
    "pytest's variable": (
        'import os\nos.environ["PYTEST_CURRENT_TEST"]\n',
        2,
        "the environment variable PYTEST_CURRENT_TEST",
    ),
    "a variable tested with in": (
        'import os\n"SCRIPT_ZYGOTE" in os.environ\n',
        2,
        "the environment variable SCRIPT_ZYGOTE",
    ),
    "a variable's name in a variable": (
        'import os\nname = "REHEARSAL_SEALED"\nos.environ.get(name)\n',
        3,
        "os.environ used otherwise",
    ),
    "a loop over the environment": (
        "import os\nfor name in os.environ:\n    print(name)\n",
        2,
        "os.environ used otherwise",
    ),
    "from os import environ": ("from os import environ\n", 1, "from os import environ"),
    "getattr of the builtins": ('getattr(__builtins__, "op" + "en")\n', 1, "getattr"),
    "__import__": ('__import__("o" + "s")\n', 1, "__import__"),
    "eval": ('eval("1")\n', 1, "eval"),
    "exec": ('exec("x = 1")\n', 1, "exec"),
    "compile": ('compile("1", "f", "eval")\n', 1, "compile"),
    "globals": ('globals()["x"]\n', 1, "globals"),
    "vars": ("vars()\n", 1, "vars"),
    "a frame's code": ("import sys\nsys._getframe().f_code\n", 2, "sys._getframe"),
    "a function's code": ("def f():\n    pass\nf.__code__.co_filename\n", 3, ".__code__"),
    "sys.modules": ('import sys\nsys.modules["inspect"]\n', 2, "sys.modules"),
    "sys.argv[0]": ("import sys\nopen(sys.argv[0])\n", 2, "open(sys.argv[0])"),
    "its own name": ('open("train_hf.py").read()\n', 1, "open('train_hf.py')"),
    "/proc/self/environ": ('open("/proc/self/environ").read()\n', 1, "open('/proc/self/environ')"),
    "a path in a variable": ('path = "/proc/self/cmdline"\nopen(path)\n', 2, "open(path)"),
    "a glob of the folder": ('from pathlib import Path\nPath(".").glob("*.py")\n', 2, "pathlib.Path('.')"),
    "an option overwritten": (ARGS + 'args.data = "train_hf.py"\nopen(args.data)\n', 3, "an assignment to .data"),
    # what the reader names: the options an ArgumentParser parsed, without a default naming a file of snippets/
    "a class attribute": ('class A:\n    x = 1\nopen(A.data)\n', 3, "open(A.data) (A is not what an ArgumentParser"),
    "a field of a class of the block": (
        'class A:\n    data: str = "train.txt"\nopen(A.data)\n',
        3,
        "open(A.data) (A is not what an ArgumentParser",
    ),
    "a class attribute named as an option": ('class A:\n    data = "train_hf.py"\n', 2, "data bound in the class A"),
    "a method named as an option": ("class A:\n    def out(self):\n        pass\n", 2, "out bound in the class A"),
    "a parser's default": (
        PARSER + 'parser.add_argument("--data", default="train_hf.py")\nargs = parser.parse_args()\nopen(args.data)\n',
        3,
        "the default 'train_hf.py' of the path option data",
    ),
    "a dataclass field's default": (
        (
            "from dataclasses import dataclass\nfrom transformers import HfArgumentParser\n@dataclass\nclass S:\n"
            '    data: str = "train_hf.py"\n(s,) = HfArgumentParser((S,)).parse_args_into_dataclasses()\nopen(s.data)\n'
        ),
        5,
        "the default 'train_hf.py' of the path option data",
    ),
    "a converter": (
        PARSER + 'parser.add_argument("--data", type=str.strip)\nargs = parser.parse_args()\nopen(args.data)\n',
        3,
        "the keyword argument type of the path option data",
    ),
    "set_defaults": (PARSER + 'parser.set_defaults(out="train_hf.py")\n', 3, "a default of the path option out"),
    "an option named by a variable": (
        PARSER + 'name = "--data"\nparser.add_argument(name)\n',
        4,
        "add_argument with an option not named by a string",
    ),
    "arguments the block passes": (
        PARSER + 'parser.add_argument("--data")\nargs = parser.parse_args(args=["--data", "train_hf.py"])\n'
        "open(args.data)\n",
        5,
        "open(args.data) (args is not what an ArgumentParser",
    ),
    "another object's parse_args": (
        "class P:\n    def parse_args():\n        pass\nargs = P.parse_args()\nopen(args.data)\n",
        5,
        "open(args.data) (args is not what",
    ),
    "a parser's name bound again": (
        (
            "import argparse\nclass P:\n    pass\nargparse = P\nargs = argparse.ArgumentParser().parse_args()\n"
            "open(args.data)\n"
        ),
        6,
        "open(args.data) (args is not what",
    ),
    "the parsed arguments bound again": (
        ARGS + "class A:\n    x = 1\nargs = A\nopen(args.data)\n",
        6,
        "open(args.data) (args is not what",
    ),
    "a loop over parsed arguments": (
        ARGS + "for each in [args]:\n    open(each.data)\n",
        4,
        "open(each.data) (each is not what",
    ),
    "open under another name": ('o = open\no("/proc/self/environ")\n', 1, "open used otherwise than called"),
    "Path passed on": ('import pathlib\n[make(".") for make in [pathlib.Path]]\n', 2, "pathlib.Path used otherwise"),
    "code from the Hub": (
        PARSER + "args = parser.parse_args()\nfrom transformers import AutoModelForCausalLM\n"
        "AutoModelForCausalLM.from_pretrained(args.model, trust_remote_code=True)\n",
        5,
        "the keyword argument trust_remote_code",
    ),
    "keywords from a mapping": ('print(**{"file": None})\n', 1, "a ** argument"),
    "a module under another name": ("import os\nread = os\nread.read(0, 1)\n", 2, "the module os used otherwise"),
    "os.system under another name": ('import os as o\no.system("id")\n', 2, "os.system"),
}


@pytest.mark.parametrize("name", EVASIONS)
def test_each_evasion_is_refused_in_one_line_naming_the_line_and_the_construct(name):
    code, line, construct = EVASIONS[name]
    with pytest.raises(BlockNameError) as caught:
        check_names(code, "b.py (fr, docs/p.fr.md)")
    assert str(caught.value).startswith(f"b.py (fr, docs/p.fr.md), line {line}: {construct}"), str(caught.value)
    assert "\n" not in str(caught.value) and "verify/block_names.py" in str(caught.value)


def test_the_projects_own_blocks_pass():
    scripts = sorted((REPO_ROOT / "snippets").rglob("*.py"))
    assert {path.name for path in scripts} >= {"train_hf.py", "train_fsdp2.py", "nccl_check.py", "dcp_to_hf.py"}
    for path in scripts:
        check_names(path.read_text(encoding="utf-8"), path.name)


def test_the_build_refuses_a_titled_block_and_an_untitled_one():
    """Every build (``TitledBlocks``, the same hook the site build runs) refuses the French
    block that reads its own comment, naming block, language, page and line; and a Python block
    without a title (not bound, but shown) or under a title that is no Python file."""
    attack = ITALIAN.replace('print("ok")', 'print(open(__file__).read().count("#"))')
    blocks = TitledBlocks()
    blocks.start("it")
    with pytest.raises(RenderError, match=r"^block 'prova.py' \(it, docs/p0.it.md\), line 5: open\(__file__\)"):
        blocks.add_page(page(("prova.py", attack)), "it", "docs/p0.it.md")
    untitled = page(("x.py", "import inspect\n")).replace('<span class="filename">x.py</span>', "")
    with pytest.raises(
        RenderError, match=r"^Python block 1 without a .py title \(it, docs/p1.it.md\), line 1: import inspect"
    ):
        blocks.add_page(untitled, "it", "docs/p1.it.md")
    with pytest.raises(
        RenderError, match=r"^Python block 1 without a .py title \(it, docs/p2.it.md\), line 1: import inspect"
    ):
        blocks.add_page(page(("x.txt", "import inspect\n")), "it", "docs/p2.it.md")  # a Python fence, another title


LISTS = (
    "IMPORTS",
    "MODULE_PATHS",
    "BUILTINS",
    "ATTRIBUTES",
    "KEYWORDS",
    "ENVIRONMENT",
    "PATH_OPTIONS",
    "FILE_CONSTANTS",
    "PARSERS",
    "PARSE_CALLS",
    "PATH_DEFAULTS",
)


def test_every_entry_of_the_lists_is_needed_by_a_block(monkeypatch):
    """The lists stay what today's blocks need: without any one entry, some file of snippets/
    is refused (an entry no block needs is one more way through)."""
    import ast

    import verify.block_names as names

    sources = [path.read_text(encoding="utf-8") for path in sorted((REPO_ROOT / "snippets").rglob("*.py"))]
    trees = [(source, ast.parse(source)) for source in sources]

    def refused(entry: str) -> bool:  # by a block whose text holds the entry's last name (the others cannot need it)
        return any(
            next(names._uses(tree), None) is not None for source, tree in trees if entry.rsplit(".", 1)[-1] in source
        )

    unneeded = []
    for list_name in LISTS:
        entries = getattr(names, list_name)
        for entry in sorted(entries):
            monkeypatch.setattr(names, list_name, entries - {entry})
            if not refused(entry):
                unneeded.append(f"{list_name}: {entry}")
        monkeypatch.setattr(names, list_name, entries)
    assert unneeded == []


def test_a_builtin_bound_after_its_use_is_refused():
    """``g = eval`` then ``eval = 0``: the binding made ``eval`` the block's own everywhere, and
    the first line still reaches Python's ``eval``. Binding a name of Python's builtins that
    BUILTINS lacks is refused where it is bound."""
    with pytest.raises(BlockNameError, match=r"^b\.py, line 2: eval \(a name of Python's or IPython's"):
        check_names('g = eval\neval = None\ng("1")\n', "b.py")
    check_names("for n in range(3):\n    print(n)\n", "b.py")  # a listed builtin read, a name of its own bound


# (code cells, the cell and line refused, the construct named): IPython's own ways to a cell's text
# (IPython's reference, "Input caching system" and "Built-in magic commands": %history)
CELL_EVASIONS = {
    "_ih": (["x = 1", "text = _ih[-1]"], "cell 2, line 1", "_ih"),
    "In": (["text = In[1]"], "cell 1, line 1", "In"),
    "_i1": (["x = 1", "text = _i1"], "cell 2, line 1", "_i1"),
    "Out": (["text = Out"], "cell 1, line 1", "Out"),
    "get_ipython": (["h = get_ipython().history_manager"], "cell 1, line 1", "get_ipython"),
    "%history": (["x = 1\n%history -n"], "cell 1, line 2", "'%history -n', a line of IPython"),
    "an indented magic": (["if True:\n    %history"], "cell 1, line 2", "'%history', a line of IPython"),
    "!shell": (["!cat x.ipynb"], "cell 1, line 1", "'!cat x.ipynb', a line of IPython"),
    "?help": (["?round"], "cell 1, line 1", "'?round', a line of IPython"),
    "x? help": (["round?"], "cell 1, line 1", "not Python"),
    "a system assignment": (["files = !ls"], "cell 1, line 1", "not Python"),
    "inspect": (["import inspect\ninspect.getsource(round)"], "cell 1, line 1", "import inspect"),
    "str.format": (['def f():\n    pass\n"{0.__globals__}".format(f)'], "cell 1, line 3", ".format"),
    "open": (['open("docs/memory-notebook.fr.ipynb")'], "cell 1, line 1", "open"),
    "a blocks' name": (["print(1)"], "cell 1, line 1", "print"),
    "In bound later": (["text = In", "In = []"], "cell 2, line 1", "In (a name of Python's or IPython's"),
    "a numbered output bound": (["_3 = 0"], "cell 1, line 1", "_3 (a name of"),
    # (attack3) matplotlib imports and calls each "module:attribute" of figure.hooks for a new figure
    "figure.hooks": (
        [
            (
                "import matplotlib.pyplot as plt\n\n"
                'plt.rcParams.update({"figure.hooks": ["builtins:print", "sys:path.append", "this:d.get"]})\n'
                "fig, ax = plt.subplots(figsize=(1, 1))"
            )
        ],
        "cell 1, line 3",
        "the setting 'figure.hooks' of matplotlib.pyplot.rcParams.update",
    ),
    "settings in a variable": (
        ["import matplotlib.pyplot as plt\nsettings = {'font.size': 14}", "plt.rcParams.update(settings)"],
        "cell 2, line 1",
        "matplotlib.pyplot.rcParams.update of anything but a dict written in the call",
    ),
    "a setting's value computed": (
        ["import matplotlib.pyplot as plt\nsize = 14\nplt.rcParams.update({'font.size': size})"],
        "cell 1, line 3",
        "the setting 'font.size' of matplotlib.pyplot.rcParams.update given size (not a constant)",
    ),
    "settings from a mapping": (
        ["import matplotlib.pyplot as plt\nplt.rcParams.update({**{'figure.hooks': []}})"],
        "cell 1, line 2",
        "the setting ** of",
    ),
    "a setting assigned": (
        ["import matplotlib.pyplot as plt\nplt.rcParams['figure.hooks'] = ['this:d.get']"],
        "cell 1, line 2",
        "matplotlib.pyplot.rcParams is not",
    ),
    "rc": (["import matplotlib.pyplot as plt\nplt.rc('figure', hooks=[])"], "cell 1, line 2", "matplotlib.pyplot.rc "),
    "update under another name": (
        ["import matplotlib.pyplot as plt\nupdate = plt.rcParams.update"],
        "cell 1, line 2",
        "matplotlib.pyplot.rcParams.update used otherwise than called",
    ),
    # a figure written to a path: only to memory (io.BytesIO), never a file a cell names
    "savefig to an absolute path": (
        [
            (
                "import io\nimport matplotlib.pyplot as plt\nfrom pathlib import Path\nfig, ax = plt.subplots()\n"
                'fig.savefig(Path("snippets/data") / "/tmp/abs.png")'
            )
        ],
        "cell 1, line 5",
        ".savefig(Path('snippets/data') / '/tmp/abs.png') (a figure is written only to a name bound to io.BytesIO())",
    ),
    "savefig into snippets/data": (
        [
            (
                "import matplotlib.pyplot as plt\nfrom pathlib import Path\nfig, ax = plt.subplots()\n"
                'fig.savefig(Path("snippets/data") / "x.png")'
            )
        ],
        "cell 1, line 4",
        ".savefig(Path('snippets/data') / 'x.png') (a figure",
    ),
    "savefig to a name bound twice": (
        [
            (
                "import io\nimport matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nbuffer = io.BytesIO()\n"
                "buffer = 'x.png'\nfig.savefig(buffer)"
            )
        ],
        "cell 1, line 6",
        ".savefig(buffer) (a figure",
    ),
    "a join out of the data": (
        ['from pathlib import Path\n(Path("snippets/data") / "../../docs/x.md").read_text()'],
        "cell 1, line 2",
        "Path('snippets/data') / '../../docs/x.md' (a path joined with an absolute part or '..')",
    ),
    "a join to an absolute path": (
        ['from pathlib import Path\nDATA = Path("snippets/data")\n(DATA / f"/{1}").read_text()'],
        "cell 1, line 3",
        "DATA / f'/{1}' (a path joined with an absolute part or '..')",
    ),
}


@pytest.mark.parametrize("name", CELL_EVASIONS)
def test_each_cell_evasion_is_refused_in_one_line_naming_the_cell_and_the_line(name):
    from verify.block_names import check_cells

    cells, place, construct = CELL_EVASIONS[name]
    with pytest.raises(BlockNameError) as caught:
        check_cells([(code, f"docs/nb.fr.ipynb: code cell {n}") for n, code in enumerate(cells, start=1)])
    message = str(caught.value)
    assert message.startswith(f"docs/nb.fr.ipynb: code {place}: {construct}"), message
    assert "\n" not in message and "verify/block_names.py" in message


def test_cells_are_one_program():
    """A name one cell binds (an import too) is the others' own, checked as the import's path."""
    from verify.block_names import check_cells

    check_cells([("import os\nLANG = os.environ.get('GUIDE_LANG', 'it')", "c1"), ("x = LANG", "c2")])
    with pytest.raises(BlockNameError, match=r"^c2, line 1: os\.system is not on the allow-list"):
        check_cells([("import os", "c1"), ("os.system('id')", "c2")])


# what tells the reader's arguments from others: blocks only (a notebook names no path option)
BLOCK_ONLY = ("PARSERS", "PARSE_CALLS", "PATH_DEFAULTS")
NOTEBOOK_LISTS = (*(f"NOTEBOOK_{name}" for name in LISTS if name not in BLOCK_ONLY), "NOTEBOOK_SETTINGS")


def test_every_entry_of_the_notebook_lists_is_needed_by_a_cell(monkeypatch):
    """The notebook lists stay what today's notebooks need: without any one entry, a notebook of
    docs/ is refused."""
    import json

    import verify.block_names as names

    notebooks = []
    for path in sorted((REPO_ROOT / "docs").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        notebooks.append([("".join(c["source"]), path.name) for c in cells if c["cell_type"] == "code"])
    assert notebooks

    def refused() -> bool:
        try:
            for cells in notebooks:
                names.check_cells(cells)
        except BlockNameError:
            return True
        return False

    assert not refused()
    unneeded = []
    for list_name in NOTEBOOK_LISTS:
        entries = getattr(names, list_name)
        for entry in sorted(entries):
            monkeypatch.setattr(names, list_name, entries - {entry})
            if not refused():
                unneeded.append(f"{list_name}: {entry}")
        monkeypatch.setattr(names, list_name, entries)
    assert unneeded == []


# -- paths: every call the lists admit that takes a path checks each path argument ---------------

# (attack3) a block copies its own text, and /proc/self/cmdline (a rehearsal's tell), onto the
# file the reader named, then reads that file: shutil.copy was listed, its arguments unchecked
PARSED = PARSER + 'parser.add_argument("--data", default="train.txt")\nargs = parser.parse_args()\n'
COPY_ITS_TEXT = (
    "import argparse\nimport shutil\n\n" + PARSED + "# Italiano: legge i dati\n"
    'shutil.copy("/proc/self/cmdline", args.data)\n'
    'rehearsal = "pytest" in open(args.data).read()\n'
    'shutil.copy("block.py", args.data)\n'
    'print("rehearsal:", rehearsal, open(args.data).read().splitlines()[7])\n'
)
PATH_EVASIONS = {
    "shutil.copy of /proc (attack3)": (COPY_ITS_TEXT, 9, "shutil.copy('/proc/self/cmdline')"),
    "shutil.copy of its own name": (
        "import shutil\n" + PARSED + 'shutil.copy("train_hf.py", args.data)\n',
        6,
        "shutil.copy('train_hf.py')",
    ),
    "shutil.copy onto a file of its own": (
        "import shutil\n" + PARSED + 'shutil.copy(args.data, "train_hf.py")\n',
        6,
        "shutil.copy('train_hf.py')",
    ),
    "torch.save anywhere": ("import torch\ntorch.save(1, '/tmp/x')\n", 2, "torch.save('/tmp/x')"),
    "os.makedirs anywhere": ("import os\nos.makedirs('/tmp/x')\n", 2, "os.makedirs('/tmp/x')"),
    "a join out of the option": (
        "import os\n" + PARSED + 'open(os.path.join(args.data, "../train_hf.py"))\n',
        6,
        "open(os.path.join(args.data, '../train_hf.py'))",
    ),
    "a join with an absolute part": (
        "import os\n" + PARSED + 'open(os.path.join(args.data, "/proc/self/cmdline"))\n',
        6,
        "open(os.path.join(args.data, '/proc/self/cmdline'))",
    ),
    "Path / an absolute part": (
        "from pathlib import Path\n" + PARSED + 'open(Path(args.data) / "/proc/self/cmdline")\n',
        6,
        "open(Path(args.data) / '/proc/self/cmdline')",
    ),
    "Path / a part in a variable": (
        "from pathlib import Path\n" + PARSED + 'name = "../train_hf.py"\nopen(Path(args.data) / name)\n',
        7,
        "open(Path(args.data) / name)",
    ),
    "an f-string part of a string": (
        "from pathlib import Path\n" + PARSED + 'name = ".."\nopen(Path(args.data) / f"{name}")\n',
        7,
        "open(Path(args.data) / f'{name}')",
    ),
    "DCP's checkpoint anywhere": (
        "import torch.distributed.checkpoint as dcp\ndcp.load({}, checkpoint_id='/x')\n",
        2,
        "torch.distributed.checkpoint.load(checkpoint_id='/x')",
    ),
    "DCP's reader anywhere": (
        "import torch.distributed.checkpoint as dcp\ndcp.FileSystemReader('/x')\n",
        2,
        "torch.distributed.checkpoint.FileSystemReader('/x')",
    ),
    "from_pretrained of a folder of the block's": (
        "from transformers import AutoConfig\nAutoConfig.from_pretrained('snippets')\n",
        2,
        "transformers.AutoConfig.from_pretrained('snippets')",
    ),
    "save_pretrained anywhere": (
        "import torch\nm = torch.nn.Linear(1, 1)\nm.save_pretrained('/tmp/x')\n",
        3,
        ".save_pretrained('/tmp/x')",
    ),
    "exists of any file": (
        "from pathlib import Path\n" + PARSED + 'Path(args.data).exists()\n(Path("/proc") / "1").exists()\n',
        7,
        ".exists() of Path('/proc') / '1'",
    ),
    "glob out of the option": (
        "from pathlib import Path\n" + PARSED + 'Path(args.data).glob("../*.py")\n',
        6,
        ".glob('../*.py') (a pattern with '..'",
    ),
    "a FileStore of the block's": (
        "import torch.distributed as dist\ndist.init_process_group('gloo', 'file:///proc/self/cmdline')\n",
        2,
        "torch.distributed.init_process_group('file:///proc/self/cmdline')",
    ),
    "output_dir of the block's": (
        "from transformers import TrainingArguments\nTrainingArguments(output_dir='/tmp/x')\n",
        2,
        "transformers.TrainingArguments(output_dir='/tmp/x')",
    ),
    "output_dir's default outside PATH_DEFAULTS": (
        PARSER + "parser.set_defaults(output_dir='/tmp/x')\n",
        3,
        ".set_defaults(output_dir='/tmp/x')",
    ),
    "shutil.copy under another name": ("import shutil\nc = shutil.copy\n", 2, "shutil.copy used otherwise than called"),
    "save_pretrained under another name": (
        "import torch\nsave = torch.nn.Linear(1, 1).save_pretrained\n",
        2,
        ".save_pretrained used otherwise than called",
    ),
    "a path argument through *": (
        "import shutil\n" + PARSED + "shutil.copy(*['/proc/self/cmdline', args.data])\n",
        6,
        "shutil.copy with a * argument",
    ),
    "a function given another path": (
        "import shutil\n" + PARSED + "def keep(path):\n    shutil.copy(path, args.data)\n"
        "keep(args.data)\nkeep('train_hf.py')\n",
        7,
        "shutil.copy(path)",
    ),
}


@pytest.mark.parametrize("name", PATH_EVASIONS)
def test_each_path_a_block_did_not_get_from_the_reader_is_refused(name):
    code, line, construct = PATH_EVASIONS[name]
    with pytest.raises(BlockNameError) as caught:
        check_names(code, "b.py")
    assert str(caught.value).startswith(f"b.py, line {line}: {construct}"), str(caught.value)


def test_the_reproduction_ran_a_copy_of_its_own_text(tmp_path):
    """The oracle for the hole: without the check, the attack3 block reads its own comment in
    the run (Python runs it; what check_names now refuses did happen)."""
    import subprocess
    import sys

    (tmp_path / "block.py").write_text(COPY_ITS_TEXT, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "block.py", "--data", "copy.txt"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert run.stdout.strip().endswith("# Italiano: legge i dati")


# joins the real snippets make (snippets/train.py, train_fsdp2.py, checkpoints/*.py), accepted
PATHS_ACCEPTED = {
    "os.path.join": "import os\nimport torch\n" + PARSED + 'torch.save(1, os.path.join(args.data, "checkpoint.pt"))\n',
    "Path /": "import torch.distributed.checkpoint as dcp\nfrom pathlib import Path\n"
    + PARSED
    + 'checkpoint = Path(args.data)\ndcp.load({}, checkpoint_id=checkpoint / "model")\n',
    "a loop over a glob": "import shutil\nfrom pathlib import Path\n"
    + PARSED
    + 'for each in Path(args.data).glob("tokenizer*"):\n    shutil.copy(each, args.data)\n',
    "a function, a lambda, an epoch": "import torch.distributed.checkpoint as dcp\nimport pathlib\n"
    + PARSED
    + "def load(path):\n    dcp.load({}, checkpoint_id=path / 'model')\n"
    + "out = pathlib.Path(args.data)\n"
    + "done = [path for path in out.glob('epoch-*') if (path / '.metadata').exists()]\n"
    + "last = max(done, key=lambda path: path.name)\nload(last)\n"
    + "for epoch in range(3):\n    load(out / f'epoch-{epoch + 1}')\n",
}


@pytest.mark.parametrize("name", PATHS_ACCEPTED)
def test_a_path_joined_under_the_readers_with_parts_written_in_the_block_is_accepted(name):
    check_names(PATHS_ACCEPTED[name], "b.py")


# The oracle for "which calls take a path": each callable's own signature (inspect, from the
# library), a parameter named or annotated as a path. A callable whose signature Python cannot
# read, or that passes ``*args`` on, is classified here by its documentation (Python's and
# torch's): numbers, sizes, tensors, modules or objects, no file.
PATHISH_NAME = r"path|dir|file|checkpoint|pattern|init_method|^f$|^src$|^dst$|^name$"
PATHISH_TYPE = r"PathLike|StrPath|Path\b"
OPAQUE_WITHOUT_PATHS = {
    "RuntimeError",
    "SystemExit",
    "bool",
    "int",
    "max",
    "min",
    "range",
    "set",
    "str",
    "zip",  # Python's builtins
    "print",  # objects to print (file= is keyword-only and not in KEYWORDS)
    "datetime.timedelta",
    "time.perf_counter",
    "torch.Generator",
    "torch.all",
    "torch.arange",
    "torch.device",
    "torch.full",
    "torch.randint",
    "torch.randn",
    "torch.nn.Sequential",  # modules
    "torch.utils.data.TensorDataset",  # tensors
    "transformers.AutoConfig.for_model",  # a model type and its config's fields
    "transformers.AutoModelForCausalLM",  # raises: made by from_config/from_pretrained only
}
# parameters named like a path that are none (their library's documentation)
NOT_PATHS = {
    ("argparse.ArgumentParser", "fromfile_prefix_chars"),  # characters; the files are the reader's arguments
    ("torch.save", "_use_new_zipfile_serialization"),  # a bool
    ("peft.LoraConfig", "base_model_name_or_path"),  # recorded in the adapter's config, not read
    ("peft.LoraConfig", "layers_pattern"),  # names of modules
    ("peft.LoraConfig", "rank_pattern"),
    ("peft.LoraConfig", "alpha_pattern"),
}
# the classes whose methods the blocks call by ATTRIBUTES (model, config, trainer, tensors...)
METHOD_CLASSES = (
    "argparse.ArgumentParser",
    "io.TextIOWrapper",
    "pathlib.Path",
    "torch.Tensor",
    "torch.nn.Module",
    "torch.optim.Optimizer",
    "torch.utils.data.DistributedSampler",
    "torch.distributed.checkpoint.FileSystemReader",
    "transformers.HfArgumentParser",
    "transformers.PreTrainedModel",
    "transformers.PreTrainedConfig",
    "transformers.Trainer",
    "accelerate.Accelerator",
)


def _resolve(dotted: str):
    import builtins
    import importlib

    parts = dotted.split(".")
    if len(parts) == 1:
        return getattr(builtins, dotted)
    for i in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            found = getattr(found, part)
        return found
    raise LookupError(dotted)


def _path_parameters(function, method: bool = False) -> list[tuple[int | None, str]] | None:
    """(position or None when keyword-only, name) of each parameter of ``function`` that takes
    a path; None when its signature cannot be read or it passes ``*args`` on."""
    import inspect
    import re

    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    if method and parameters and parameters[0].name in ("self", "cls"):
        parameters = parameters[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return None
    found = []
    for index, p in enumerate(parameters):
        annotation = "" if p.annotation is p.empty else str(p.annotation)
        if p.kind is not p.VAR_KEYWORD and (re.search(PATHISH_NAME, p.name) or re.search(PATHISH_TYPE, annotation)):
            found.append((index if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else None, p.name))
    return found


def _uncovered(name: str, parameters, rule, keywords) -> list[str]:
    """The path parameters of ``name`` its rule (``PathArguments`` or None) leaves unchecked
    and a block can reach (positionally, or by a keyword of KEYWORDS)."""
    missing = []
    for position, parameter in parameters:
        if (name, parameter) in NOT_PATHS:
            continue
        covered = rule is not None and (position in rule.positions or parameter in rule.keywords)
        beyond = position is None or (rule is not None and rule.positional is not None and position >= rule.positional)
        if not covered and not (beyond and parameter not in keywords):
            missing.append(f"{name}: {parameter}")
    return missing


def test_every_call_the_lists_admit_that_takes_a_path_has_a_rule_for_each_path_argument():
    """Derived from the lists: every callable of MODULE_PATHS, BUILTINS and the ``from X import
    n`` of IMPORTS, and every method of ATTRIBUTES on the classes the blocks call them on, whose
    signature takes a path has a rule for each path argument a block can pass (PATH_CALLS,
    PATH_METHODS, PATH_JOINS; Path's methods that touch the file system: PATH_RECEIVERS; a
    keyword named as a path: PATH_KEYWORDS). A call newly listed without one fails here."""
    import inspect
    import pathlib
    import re
    import types

    import verify.block_names as names

    callables = names.MODULE_PATHS | names.BUILTINS | {entry for entry in names.IMPORTS if "." in entry}
    missing, opaque = [], []
    for dotted in sorted(callables):
        found = _resolve(dotted)
        if isinstance(found, types.ModuleType) or not callable(found) or dotted in names.PATH_JOINS:
            continue
        parameters = _path_parameters(found)
        if parameters is None:
            if dotted not in names.PATH_CALLS and dotted not in OPAQUE_WITHOUT_PATHS:
                opaque.append(dotted)
            continue
        missing += _uncovered(dotted, parameters, names.PATH_CALLS.get(dotted), names.KEYWORDS)
    for class_name in METHOD_CLASSES:
        owner = _resolve(class_name)
        for attribute in sorted(names.ATTRIBUTES):
            function = inspect.getattr_static(owner, attribute, None)
            if not callable(function) or attribute in names.PATH_RECEIVERS:
                continue
            parameters = _path_parameters(getattr(owner, attribute), method=True)
            if parameters is None:
                continue
            rule = names.PATH_METHODS.get(attribute)
            missing += _uncovered(f"{class_name}.{attribute}", parameters, rule, names.KEYWORDS)
    assert (missing, opaque) == ([], [])
    # pathlib.Path's own methods that read the file system (not PurePath's): the object is the path
    touching = {a for a in set(dir(pathlib.Path)) - set(dir(pathlib.PurePath)) if callable(getattr(pathlib.Path, a))}
    assert names.ATTRIBUTES & touching <= names.PATH_RECEIVERS
    # a keyword named as a path reaches any callable taking **kwargs (from_pretrained's cache_dir...)
    assert {k for k in names.KEYWORDS if re.search(PATHISH_NAME, k)} <= names.PATH_KEYWORDS
    # every rule names a callable of the lists
    assert set(names.PATH_CALLS) <= callables and callables >= names.PATH_JOINS
    assert set(names.PATH_METHODS) | names.PATH_RECEIVERS <= names.ATTRIBUTES


def test_the_path_oracle_finds_a_newly_listed_call(monkeypatch):
    """The test above can fail: with shutil.copy's rule taken out (the state attack3 found),
    or torch.save newly listed as torch.load without one, it names the parameters."""
    import verify.block_names as names

    monkeypatch.setattr(names, "PATH_CALLS", {k: v for k, v in names.PATH_CALLS.items() if k != "shutil.copy"})
    with pytest.raises(AssertionError, match=r"shutil\.copy: src.*shutil\.copy: dst"):
        test_every_call_the_lists_admit_that_takes_a_path_has_a_rule_for_each_path_argument()
    monkeypatch.undo()
    monkeypatch.setattr(names, "MODULE_PATHS", names.MODULE_PATHS | {"torch.load", "shutil.rmtree"})
    with pytest.raises(AssertionError, match=r"shutil\.rmtree: path.*torch\.load: f"):
        test_every_call_the_lists_admit_that_takes_a_path_has_a_rule_for_each_path_argument()


def test_every_call_that_changes_matplotlibs_settings_has_the_keys_rule():
    """Derived from the lists: an entry that changes matplotlib's settings (``rcParams``,
    ``rc``, ``rc_context``, ``style``; a setting can name code to import: ``figure.hooks``) is
    checked by key (SETTINGS_CALLS); the blocks' lists hold none."""
    import re

    import verify.block_names as names

    settings = re.compile(r"^matplotlib\..*\b(rcParams|rc|rc_context|rcdefaults|style)\b")
    listed = {e for e in names.NOTEBOOK_MODULE_PATHS | names.NOTEBOOK_IMPORTS if settings.search(e)}
    assert listed == names.SETTINGS_CALLS == {"matplotlib.pyplot.rcParams.update"}
    assert not {e for e in names.MODULE_PATHS | names.IMPORTS if e.startswith("matplotlib")}
