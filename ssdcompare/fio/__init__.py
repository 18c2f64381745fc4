"""fio itself: the binary and its one command line, jobfiles and their checks, logs,
client/server, reading its output."""
