"""The foundation every layer may use: the two registries (lib/sections.tsv, lib/options.tsv), the
statistics over repetitions and histogram bins, and where a results tree's outputs go."""
