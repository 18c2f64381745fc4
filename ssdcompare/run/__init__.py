"""Running: the plan, the sampler and watchdog, the runner, preconditioning, ceilings, the
sweep."""
