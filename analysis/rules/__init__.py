"""From repetitions to numbers and verdicts: one summary row per case, and the rules read from
them (knee, 90% of peak, objective depth; cliff and steady state; the peak search)."""
