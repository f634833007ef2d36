"""Sphinx configuration of the lmnn-sdp documentation.

Build from the repository root, warnings as errors::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import importlib.metadata
import inspect
import os
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # document this checkout, whatever is installed

os.environ.setdefault("MPLBACKEND", "Agg")

project = "lmnn-sdp"
author = "the lmnn-sdp authors"
copyright = "the lmnn-sdp authors"
release = version = importlib.metadata.version("lmnn-sdp")  # the one place is pyproject.toml

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "**/*.zip", "**/*.md5"]

# API reference: one page per public name, generated at build time (not committed).
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # the numpydoc sections state the types
autodoc_member_order = "bysource"

# numpydoc: no member tables (methods are documented on each class page); no validation checks,
# so the build passes on the docstrings as they are and on valid numpydoc.
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True

# MyST: the Markdown pages under docs/ (guide, design notes, results records).
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# The gallery: examples/ at the repository root, executed at every build.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "within_subsection_order": "FileNameSortKey",
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "plot_gallery": "True",
    "capture_repr": (),
    "matplotlib_animations": False,
    "show_memory": False,
}

OWN_PACKAGES = ("fast_solver", "lmnn_sdp", "validation")


def skip_foreign_members(app, what, name, obj, skip, options):
    """Class pages document the members this project defines, inherited ones included, and
    not those of scikit-learn's bases (their docstrings refer to scikit-learn's own site)."""
    if what != "class":
        return None
    if re.fullmatch(r"set_\w+_request", name):  # scikit-learn's metadata routing
        return True
    function = obj.fget if isinstance(obj, property) else obj
    if inspect.isroutine(function) or isinstance(obj, property):
        module = getattr(inspect.unwrap(function), "__module__", None) or ""
        if module.split(".")[0] not in OWN_PACKAGES:
            return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", skip_foreign_members)


html_theme = "pydata_sphinx_theme"
html_title = "lmnn-sdp"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []
html_show_sourcelink = False
