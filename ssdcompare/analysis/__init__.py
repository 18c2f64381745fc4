"""Results read back: the frame, its columns and cache, per-second and per-burst data, the
answer."""
