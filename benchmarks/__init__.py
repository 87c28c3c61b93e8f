"""Benchmarks run by hand or by ``make``: data generators and runners, outside the app."""
