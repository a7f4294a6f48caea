"""Reading fio's own output: its JSON and json+ (2.1 to 3.41), its per-second and histogram logs,
and a CSV summary of any fio JSON."""
