"""Peer servers the benchmarks start as child processes."""
