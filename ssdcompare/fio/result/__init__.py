"""fio's JSON output read into models: the quick reader, the careful reader, merging,
plausibility."""
