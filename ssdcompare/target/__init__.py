"""What fio runs against: hosts, devices and files, the safety guard, identity, locks,
metadata, probes."""
