"""Symbolic analysis over the cost formulas: structure in T, checks, metrics, exported code."""
