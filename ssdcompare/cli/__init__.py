"""The command line, the terminal output and the Python API."""
