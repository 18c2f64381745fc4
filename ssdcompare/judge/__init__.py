"""The rules results are judged by: CPU saturation, steady state, statistics, verdicts."""
