"""A suite file becomes models: options fio accepts, workloads, matrices, the bundled suites."""
