"""The one error type users see: a clear, one-line message (the CLI exits with status 2)."""


class SymcostError(ValueError):
    """Bad input: a config, a field, an option or an expression symcost cannot accept."""
