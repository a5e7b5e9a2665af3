"""The results viewer (`logicpipe view`) and the failure list (`logicpipe failures`)."""

from .failures import failed_problems
from .page import render_html, write_html
from .run import RunView, load_run
from .serve import page_server, url

__all__ = ["RunView", "failed_problems", "load_run", "page_server", "render_html", "url", "write_html"]
