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
NOTEBOOK_LISTS = tuple(f"NOTEBOOK_{name}" for name in LISTS if name not in BLOCK_ONLY)


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
