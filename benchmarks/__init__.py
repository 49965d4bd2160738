"""Benchmarks (`make bench`): speed and memory targets, printed as ratios measured in one run."""
