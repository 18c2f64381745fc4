"""ssdcompare: compare storage devices with fio, and say which numbers to trust."""

from ssdcompare.errors import SsdcompareError

__version__ = "0.1.0"

__all__ = ["SsdcompareError", "__version__"]
