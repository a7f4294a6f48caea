"""A model drive: a RAM-backed loop device throttled by a cgroup so that it writes like an SSD
with a write (SLC) cache of known size, for tests and benches with known answers.

cache.py holds the model (its rules, as pure bookkeeping), drive.py the device and the watcher
that applies the model (``model_drive()``), cli.py the command line (``python -m
tools.model_drive``, which bench/model-drive runs).
"""
