"""The version of ssdcompare: a module of its own, so any part of the code can name it without
loading the package's front door (ssdcompare/__init__.py)."""

__version__ = "0.1.0"
