"""Drift monitoring of MT systems: translate afresh on a schedule, compare each system with its
baseline (McNemar per item, intervals of each change), keep an append-only history, raise the
alarm. Sits above ``pipeline``: a monitoring run is a sweep.
"""
