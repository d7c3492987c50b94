"""zotsync's version: the one place it is written (pyproject.toml reads it; `zotsync.__version__`)."""

__version__ = "0.2.0"
