"""The results folder: every file name, format version and signature, and where outputs may go."""
